local p = import '../lib/promql.libsonnet';
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    local mib(b) = b / 1048576,
    groups+: [{
      name: 'hostperf-disk',
      rules: [
        // vioperf: read and write at least 20 MB/s per physical core (40
        // recommended), judged on full-strength runs only: the sum over the
        // directories of the host's last full run (figure write_... or read_...).
        a('HostperfDiskBelowMinimumPerCore',
          'hostperf:disk_full_run_bytes_per_second_per_core:sum < %d' % c.diskPerCoreMinimumBytes,
          'warning', 'Disk {{ $labels.figure }} below %g MB/s per core on {{ $labels.instance }}' % mib(c.diskPerCoreMinimumBytes),
          'The last full disk run on {{ $labels.instance }} (job {{ $labels.job }}) measured {{ $labels.figure }} of {{ $value | humanize1024 }}B/s per physical core, summed over its directories: below vioperf\'s required minimum of %g MB/s per core.' % mib(c.diskPerCoreMinimumBytes),
          c.forMedium),
        a('HostperfDiskBelowRecommendedPerCore',
          '(hostperf:disk_full_run_bytes_per_second_per_core:sum < %d) >= %d' % [c.diskPerCoreRecommendedBytes, c.diskPerCoreMinimumBytes],
          'info', 'Disk {{ $labels.figure }} below %g MB/s per core on {{ $labels.instance }}' % mib(c.diskPerCoreRecommendedBytes),
          'The last full disk run on {{ $labels.instance }} (job {{ $labels.job }}) measured {{ $labels.figure }} of {{ $value | humanize1024 }}B/s per physical core, summed over its directories: above the minimum but below vioperf\'s recommended %g MB/s per core.' % mib(c.diskPerCoreRecommendedBytes),
          c.forMedium),
        // Scheduled bursts against the host's own baseline (same directory and test).
        a('HostperfDiskSlowerThanBaseline',
          'hostperf:disk_throughput_bytes_per_second:baseline_ratio < %g' % c.baselineRatio.disk,
          'warning', 'Disk {{ $labels.test }} slower than its baseline on {{ $labels.instance }}',
          '{{ $labels.test }} in {{ $labels.directory }} on {{ $labels.instance }} (job {{ $labels.job }}) runs at {{ $value | humanizePercentage }} of its own median of the last %s (the median of its scheduled bursts over %s), below %g %% for %s.' % [p.words(c.baselineWindow), p.words(c.smoothWindow), c.baselineRatio.disk * 100, p.words(c.forVeryLong)],
          c.forVeryLong),
        // gpcheckperf field report: one array at 365 MB/s against 620 for its
        // peers (59 %). Compared within the fleet and the directory role only.
        a('HostperfDiskSlowerThanFleet',
          |||
            hostperf:disk_throughput_bytes_per_second:fleet_ratio < %(r)g
              and on(%(f)s, role, test)
            hostperf_fleet:disk_throughput_bytes_per_second:count >= %(n)d
          ||| % { r: c.fleetRatio, f: c.fleetLabel, n: c.fleetMinHosts },
          'warning', 'Disk {{ $labels.test }} slower than its fleet on {{ $labels.instance }}',
          '{{ $labels.test }} in {{ $labels.directory }} ({{ $labels.role }}) on {{ $labels.instance }} runs at {{ $value | humanizePercentage }} of the median of the {{ $labels.role }} directories of %s {{ $labels.%s }}, below %g %% for %s: one array much slower than its peers.' % [c.fleetLabel, c.fleetLabel, c.fleetRatio * 100, p.words(c.forVeryLong)],
          c.forVeryLong),
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
