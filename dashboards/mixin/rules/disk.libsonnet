local p = import '../lib/promql.libsonnet';
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    // A fleet comparison groups like with like: fleet, directory role, device class, test.
    local group = '%s, role, device_class, test' % c.fleetLabel,
    groups+: [{
      name: 'hostperf-disk-recording',
      rules: [
        // vioperf's thresholds are per physical core (hyper-threads do not count).
        // Scheduled bursts, for the dashboards; the thresholds judge full runs.
        {
          record: 'hostperf:disk_throughput_per_core_bytes_per_second',
          expr: |||
            %s
              / on(instance, job) group_left()
            (%s > 0)
          ||| % [m('hostperf_disk_throughput_bytes_per_second'), m('hostperf_host_physical_cores')],
        },
        // Full runs: per host, the sum over the directories of its last full
        // run of the per-core figures ("per core on each node").
        {
          record: 'hostperf:disk_full_run_bytes_per_second_per_core:sum',
          expr: p.hostLabels(c, |||
            sum without(subject) (
              %s
            )
          ||| % m('hostperf_full_run_figure', 'probe="disk", figure=~"write_bytes_per_second_per_core|read_bytes_per_second_per_core"')),
        },
        // Scheduled bursts smoothed, labelled with the directory's role and
        // device class (<media>_<transport>_<filesystem>, read by the probe
        // from /sys): a host is compared only with the same kind of storage.
        // An older exporter has no device_class: its series group by role
        // alone (the empty value), as before. The median, not the
        // mean: one burst served from a controller's cache at 10x the disk's
        // rate would lift a mean for the whole window (and, early in a short
        // history, the baseline after it), then read as a slowdown.
        {
          record: 'hostperf:disk_throughput_bytes_per_second:smoothed',
          expr: p.hostLabels(c, |||
            quantile_over_time(0.5, %s[%s])
              * on(instance, job, directory) group_left(role, device_class)
            %s
          ||| % [m('hostperf_disk_throughput_bytes_per_second', 'test=~"%s"' % c.diskTests), c.smoothWindow,
                 m('hostperf_disk_directory_info')]),
        },
        // hostperf:disk_throughput_bytes_per_second:baseline, the host's own
        // baseline per directory and test: rules/baselines.libsonnet.
        {
          record: 'hostperf:disk_throughput_bytes_per_second:baseline_ratio',
          expr: |||
            hostperf:disk_throughput_bytes_per_second:smoothed
              / (hostperf:disk_throughput_bytes_per_second:baseline > 0)
          |||,
        },
        // The fleet median per directory role, device class and test
        // (gpcheckperf compares one array with its peers of the same kind).
        {
          record: 'hostperf_fleet:disk_throughput_bytes_per_second:median',
          expr: 'quantile by (%s) (0.5, hostperf:disk_throughput_bytes_per_second:smoothed)' % group,
        },
        // Hosts (not directories) in each group: fleetMinHosts counts hosts.
        {
          record: 'hostperf_fleet:disk_throughput_bytes_per_second:count',
          expr: 'count by (%s) (group by (%s, %s) (hostperf:disk_throughput_bytes_per_second:smoothed))'
                % [group, group, c.hostLabel],
        },
        // The fastest of each group: the reference of groups too small for a
        // median (2 .. fleetMinHosts-1 hosts; with 2, a host's only peer).
        {
          record: 'hostperf_fleet:disk_throughput_bytes_per_second:max',
          expr: 'max by (%s) (hostperf:disk_throughput_bytes_per_second:smoothed)' % group,
        },
        {
          record: 'hostperf:disk_throughput_bytes_per_second:fleet_ratio',
          expr: |||
            hostperf:disk_throughput_bytes_per_second:smoothed
              / on(%(g)s) group_left()
            (hostperf_fleet:disk_throughput_bytes_per_second:median > 0)
          ||| % { g: group },
        },
        {
          record: 'hostperf:disk_throughput_bytes_per_second:peer_ratio',
          expr: |||
            hostperf:disk_throughput_bytes_per_second:smoothed
              / on(%(g)s) group_left()
            (hostperf_fleet:disk_throughput_bytes_per_second:max > 0)
          ||| % { g: group },
        },
        // Correlated faults: per group, the hosts below baselineRatio.disk of
        // their own baseline, the hosts with a baseline, and the median ratio.
        {
          record: 'hostperf_fleet:disk_throughput_bytes_per_second:below_baseline_hosts',
          expr: |||
            count by (%(g)s) (
              group by (%(g)s, %(h)s) (hostperf:disk_throughput_bytes_per_second:baseline_ratio < %(r)g)
            )
          ||| % { g: group, h: c.hostLabel, r: c.baselineRatio.disk },
        },
        {
          record: 'hostperf_fleet:disk_throughput_bytes_per_second:baseline_hosts',
          expr: |||
            count by (%(g)s) (
              group by (%(g)s, %(h)s) (hostperf:disk_throughput_bytes_per_second:baseline_ratio)
            )
          ||| % { g: group, h: c.hostLabel },
        },
        {
          record: 'hostperf_fleet:disk_throughput_bytes_per_second:baseline_ratio_median',
          expr: 'quantile by (%s) (0.5, hostperf:disk_throughput_bytes_per_second:baseline_ratio)' % group,
        },
        // The op-latency p99 and its baseline: rules/baselines.libsonnet.
      ],
    }],
  },
}
