local p = import '../lib/promql.libsonnet';
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    local mib(b) = b / 1048576,
    // Operator-triggered full runs are outside the promise (the budget excludes them too).
    local noFullRun = 'unless on(instance, job)\n(max_over_time(%s[%s]) > 0)' % [m('hostperf_full_run_active'), c.sidecarWindow],
    groups+: [{
      name: 'hostperf-sidecar',
      rules: [
        // A fleet-wide peers_file mistake (a bad edit pushed to every host) is
        // one alert per fleet, not one per host; each host keeps its last good list.
        a('HostperfPeersFileInvalid',
          'count by (%s) (hostperf:net_peers_file_valid == 0)' % c.fleetLabel,
          'warning', 'peers_file refused on {{ $value }} hosts of %s {{ $labels.%s }}' % [c.fleetLabel, c.fleetLabel],
          '{{ $value }} of the {{ with printf "count(hostperf:net_peers_file_valid{%s=%%q})" $labels.%s | query }}{{ . | first | value }}{{ end }} hosts of %s {{ $labels.%s }} refused the current version of their peers_file (unreadable, unparsable, or an empty list replacing a non-empty one without probes.net.allow_empty_peers_file) and keep probing their last good list: membership changes since then are not applied. Check the file on those hosts (hostperf_net_peers_file_valid == 0), hostperf_net_peers_file_errors_total and the daemon log, which names the file and the error.' % [c.fleetLabel, c.fleetLabel, c.fleetLabel, c.fleetLabel],
          c.forShort),
        // What the sidecar promises its host: the whole process's CPU and
        // resident memory within documented bounds, the budgets not spent.
        a('HostperfSidecarOverBudget',
          '(hostperf:sidecar_cpu_cores:rate1h > %g)\n%s' % [c.sidecarCpuMaxCores, noFullRun],
          'warning', 'hostperf uses {{ $value | humanizePercentage }} of a core on {{ $labels.instance }}',
          'hostperf_exporter on {{ $labels.instance }} (job {{ $labels.job }}) used {{ $value | humanizePercentage }} of one core over the last %s (process_cpu_seconds_total, the whole process), above the bound of %g %% for %s (at the defaults it uses about 0.5 %%; its probes may use budget.cpu_seconds_per_hour, 36 s = 1 %%, and scrapes and the peer responder are not budgeted). No full run was active. Look at hostperf_budget_cpu_used_seconds and the probes\' intervals, the scrape rate and hostperf_net_responder_dropped_total.' % [p.words(c.sidecarWindow), c.sidecarCpuMaxCores * 100, p.words(c.forLong)],
          c.forLong, { resource: 'cpu' }),
        a('HostperfSidecarOverBudget',
          '(hostperf:sidecar_resident_memory_bytes:min1h > %d)\n%s' % [c.sidecarMemoryMaxBytes, noFullRun],
          'warning', 'hostperf holds {{ $value | humanize1024 }}B resident on {{ $labels.instance }}',
          'hostperf_exporter on {{ $labels.instance }} (job {{ $labels.job }}) has held at least {{ $value | humanize1024 }}B resident for the last %s (the lowest process_resident_memory_bytes; STREAM\'s arrays come and go with each run), above the bound of %g MiB for %s (about 17 MiB steady is measured, 20 MiB the target). No full run was active. A leak, or far more peers, connections or directories than usual.' % [p.words(c.sidecarWindow), mib(c.sidecarMemoryMaxBytes), p.words(c.forLong)],
          c.forLong, { resource: 'memory' }),
        a('HostperfSidecarOverBudget',
          p.call('label_replace', 'hostperf:sidecar_budget_used:ratio >= %g' % c.sidecarBudgetFullRatio,
                 '"resource", "${1}_budget", "resource", "(.*)"'),
          'warning', 'hostperf\'s {{ $labels.resource }} is spent on {{ $labels.instance }}',
          'hostperf_exporter on {{ $labels.instance }} (job {{ $labels.job }}) has used {{ $value | humanizePercentage }} of its {{ $labels.resource }} (hostperf_budget_*_used / _limit, the rolling hour), at least %g %% for %s: scheduled runs are being skipped (hostperf_probe_skipped_total{reason="budget_exhausted"}) and measuring is thinned out. Lengthen the probes\' intervals or raise the [budget] limit.' % [c.sidecarBudgetFullRatio * 100, p.words(c.forLong)],
          c.forLong),
      ],
    }],
  },
}
