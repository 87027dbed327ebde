local p = import '../lib/promql.libsonnet';
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    local mib(b) = b / 1048576,
    // The documented defaults: an annotation names the reference tool only
    // where the threshold is still its figure (else "the configured ...").
    local d = (import '../config.libsonnet')._config,
    local group = '%s, role, device_class, test' % c.fleetLabel,
    // " (ssd_nvme_xfs)" where the series has a device class (an older exporter has none).
    local dc = '{{ with $labels.device_class }} ({{ . }}){{ end }}',
    // A cluster-wide fault (HostperfDiskClusterSlowerThanBaseline) without its `for:`:
    // at least clusterShare of a group's hosts, and fleetMinHosts, below their baselines.
    local clusterSlow = |||
      (
        hostperf_fleet:disk_throughput_bytes_per_second:below_baseline_hosts
          >= on(%(g)s) %(share)g * hostperf_fleet:disk_throughput_bytes_per_second:baseline_hosts
      ) >= %(n)d
    ||| % { g: group, share: c.clusterShare, n: c.fleetMinHosts },
    local count(name) =
      '{{ with printf "%s{%s=%%q, role=%%q, device_class=%%q, test=%%q}" $labels.%s $labels.role $labels.device_class $labels.test | query }}{{ . | first | value }}{{ end }}'
      % [name, c.fleetLabel, c.fleetLabel],
    groups+: [{
      name: 'hostperf-disk',
      rules: [
        // vioperf: read and write at least 20 MiB/s per physical core (40
        // recommended), judged on full-strength runs only: the sum over the
        // directories of the host's last full run (figure write_... or read_...).
        a('HostperfDiskBelowMinimumPerCore',
          'hostperf:disk_full_run_bytes_per_second_per_core:sum < %d' % c.diskPerCoreMinimumBytes,
          'warning', 'Disk {{ $labels.figure }} below %g MiB/s per core on {{ $labels.instance }}' % mib(c.diskPerCoreMinimumBytes),
          'The last full disk run on {{ $labels.instance }} (job {{ $labels.job }}) measured {{ $labels.figure }} of {{ $value | humanize1024 }}B/s per physical core, summed over its directories: below %s of %g MiB/s per core.' % [
            if c.diskPerCoreMinimumBytes == d.diskPerCoreMinimumBytes then "vioperf's required minimum" else 'the configured minimum',
            mib(c.diskPerCoreMinimumBytes),
          ],
          c.forMedium),
        a('HostperfDiskBelowRecommendedPerCore',
          '(hostperf:disk_full_run_bytes_per_second_per_core:sum < %d) >= %d' % [c.diskPerCoreRecommendedBytes, c.diskPerCoreMinimumBytes],
          'info', 'Disk {{ $labels.figure }} below %g MiB/s per core on {{ $labels.instance }}' % mib(c.diskPerCoreRecommendedBytes),
          'The last full disk run on {{ $labels.instance }} (job {{ $labels.job }}) measured {{ $labels.figure }} of {{ $value | humanize1024 }}B/s per physical core, summed over its directories: above the minimum but below %s %g MiB/s per core.' % [
            if c.diskPerCoreRecommendedBytes == d.diskPerCoreRecommendedBytes then "vioperf's recommended" else 'the configured recommendation of',
            mib(c.diskPerCoreRecommendedBytes),
          ],
          c.forMedium),
        // Scheduled bursts against the host's own baseline (same directory and
        // test), unless most of its group is slow too: that is one cluster-wide
        // fault, HostperfDiskClusterSlowerThanBaseline (an inhibit rule of the
        // example Alertmanager config is the second defence).
        a('HostperfDiskSlowerThanBaseline',
          |||
            hostperf:disk_throughput_bytes_per_second:baseline_ratio < %(r)g
              unless on(%(g)s)
            %(cluster)s
          ||| % { r: c.baselineRatio.disk, g: group, cluster: p.indent(clusterSlow, '') },
          'warning', 'Disk {{ $labels.test }} slower than its baseline on {{ $labels.instance }}',
          '{{ $labels.test }} in {{ $labels.directory }} on {{ $labels.instance }} (job {{ $labels.job }}) runs at {{ $value | humanizePercentage }} of its own median of the last %s (the median of its scheduled bursts over %s), below %g %% for %s.' % [p.words(c.baselineWindow), p.words(c.smoothWindow), c.baselineRatio.disk * 100, p.words(c.forVeryLong)],
          c.forVeryLong),
        // A whole group (fleet, role, device class, test) slower than its own
        // baselines at once: one alert naming the cluster, not one per host.
        a('HostperfDiskClusterSlowerThanBaseline',
          |||
            hostperf_fleet:disk_throughput_bytes_per_second:baseline_ratio_median
              and on(%(g)s)
            %(cluster)s
          ||| % { g: group, cluster: p.indent(clusterSlow, '') },
          'warning', 'Disk {{ $labels.test }} of %s {{ $labels.%s }} slower than its baseline on most hosts' % [c.fleetLabel, c.fleetLabel],
          '%s of the %s hosts of %s {{ $labels.%s }} with {{ $labels.role }} directories%s run {{ $labels.test }} below %g %% of their own median of the last %s; the median host is at {{ $value | humanizePercentage }}, for %s. A fault shared by the %s (a storage network or array, a firmware, kernel or mount option change, a new workload), not one host: the hosts\' HostperfDiskSlowerThanBaseline alerts are held back while it lasts.' % [
            count('hostperf_fleet:disk_throughput_bytes_per_second:below_baseline_hosts'),
            count('hostperf_fleet:disk_throughput_bytes_per_second:baseline_hosts'),
            c.fleetLabel, c.fleetLabel, dc, c.baselineRatio.disk * 100, p.words(c.baselineWindow),
            p.words(c.forVeryLong), c.fleetLabel,
          ],
          c.forVeryLong),
        // gpcheckperf field report: one array at 365 MB/s against 620 for its
        // peers (59 %). Compared within the fleet, the directory role and the
        // device class only, where the group has at least fleetMinHosts hosts.
        a('HostperfDiskSlowerThanFleet',
          |||
            hostperf:disk_throughput_bytes_per_second:fleet_ratio < %(r)g
              and on(%(g)s)
            hostperf_fleet:disk_throughput_bytes_per_second:count >= %(n)d
          ||| % { r: c.fleetRatio, g: group, n: c.fleetMinHosts },
          'warning', 'Disk {{ $labels.test }} slower than its fleet on {{ $labels.instance }}',
          '{{ $labels.test }} in {{ $labels.directory }} ({{ $labels.role }}%s) on {{ $labels.instance }} runs at {{ $value | humanizePercentage }} of the median of the {{ $labels.role }} directories%s of %s {{ $labels.%s }}, below %g %% for %s: one array much slower than its peers.' % [
            '{{ with $labels.device_class }}, {{ . }}{{ end }}', dc, c.fleetLabel, c.fleetLabel, c.fleetRatio * 100, p.words(c.forVeryLong),
          ],
          c.forVeryLong),
        // A group too small for a median (2 .. fleetMinHosts-1 hosts): each
        // directory against the fastest of its group, so a slow host in a
        // small cluster is not silent. A lone host has its own baseline only.
        a('HostperfDiskSlowerThanFleet',
          |||
            hostperf:disk_throughput_bytes_per_second:peer_ratio < %(r)g
              and on(%(g)s)
            (hostperf_fleet:disk_throughput_bytes_per_second:count >= 2) < %(n)d
          ||| % { r: c.fleetRatio, g: group, n: c.fleetMinHosts },
          'warning', 'Disk {{ $labels.test }} slower than its %s on {{ $labels.instance }}' % (if c.fleetMinHosts <= 3 then 'only peer' else 'peers'),
          '{{ $labels.test }} in {{ $labels.directory }} ({{ $labels.role }}%s) on {{ $labels.instance }} runs at {{ $value | humanizePercentage }} of the fastest {{ $labels.role }} directory%s of %s {{ $labels.%s }}, below %g %% for %s. The group has %s hosts, fewer than the %d a fleet median needs, so it is %s.' % [
            '{{ with $labels.device_class }}, {{ . }}{{ end }}', dc, c.fleetLabel, c.fleetLabel, c.fleetRatio * 100, p.words(c.forVeryLong),
            count('hostperf_fleet:disk_throughput_bytes_per_second:count'), c.fleetMinHosts,
            if c.fleetMinHosts <= 3 then 'compared with its only peer' else 'compared with the fastest of its peers',
          ],
          c.forVeryLong, { compared_with: 'fastest_peer' }),
        a('HostperfDiskVerifyErrors',
          p.hostLabels(c, 'increase(%s[%s]) > 0' % [m('hostperf_disk_verify_errors_total'), c.errorWindow]),
          'critical', 'Disk returned corrupt data on {{ $labels.instance }}',
          'Blocks read back from {{ $labels.directory }} on {{ $labels.instance }} (job {{ $labels.job }}) in the last %s had a wrong CRC32C, file, offset or generation (hostperf_disk_verify_errors_total rose): the storage returned data it was not given.' % p.words(c.errorWindow)),
        // Attribution inside the host: one member of the array behind a
        // directory serves its I/O much slower than the others (the field
        // report's "one disk in the array starts to under perform but
        // doesn't fail out"), from the kernel's per-device counters around
        // the probe's own runs. One alert per member and direction.
        a('HostperfDiskMemberSlow',
          p.hostLabels(c, '%s > %g' % [m('hostperf_disk_member_service_ratio'), c.diskMemberSlowRatio]),
          'warning', 'One disk of the array behind {{ $labels.directory }} is slow on {{ $labels.instance }}',
          'Array behind {{ $labels.directory }} on {{ $labels.instance }} (job {{ $labels.job }}): member {{ $labels.device }} serves {{ $labels.op }}s {{ $value | printf "%%.1f" }}× slower than its {{ with printf "hostperf_disk_members{instance=%%q,directory=%%q} - 1" $labels.instance $labels.directory | query }}{{ . | first | value | printf "%%.0f" }}{{ end }} siblings (the median of their time per operation during the probe\'s runs), above %g for %s. hostperf_disk_member_info names its physical disks, model and serial.' % [c.diskMemberSlowRatio, p.words(c.forMedium)],
          c.forMedium),
        // p99 of latencyWindow above twice its baseline, and above 1 ms.
        a('HostperfDiskLatencyRegression',
          p.hostLabels(c, |||
            (hostperf:disk_op_latency_seconds:p99_1h > %g * hostperf:disk_op_latency_seconds:p99_1h_baseline_7d)
              > %g
          ||| % [c.diskLatencyRegressionFactor, c.diskLatencyFloorSeconds]),
          'warning', 'Disk {{ $labels.op }} latency regressed on {{ $labels.instance }}',
          'The p99 latency of {{ $labels.op }} in {{ $labels.directory }} on {{ $labels.instance }} (job {{ $labels.job }}) is {{ $value | humanizeDuration }} over the last %s, more than %g times its median of the last %s, for %s.' % [p.words(c.latencyWindow), c.diskLatencyRegressionFactor, p.words(c.baselineWindow), p.words(c.forVeryLong)],
          c.forVeryLong),
      ],
    }],
  },
}
