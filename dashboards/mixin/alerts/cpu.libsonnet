local p = import '../lib/promql.libsonnet';
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    // The documented defaults: vcpuperf is named only while its figure is the threshold.
    local d = (import '../config.libsonnet')._config,
    groups+: [{
      name: 'hostperf-cpu',
      rules: [
        // vcpuperf: a low-load time much above 100-200 us, or much above the
        // high-load time, means power-saving (low-load) throttling.
        a('HostperfCpuLowLoadThrottling',
          p.hostLabels(c, '%s > %g' % [m('hostperf_cpu_task_median_seconds', 'load="low"'), c.cpuLowLoadMedianSeconds]),
          'warning', 'CPU low-load throttling on {{ $labels.instance }}',
          'The median time of the ~70 us task after an idle gap is {{ $value | humanizeDuration }} on {{ $labels.instance }} (job {{ $labels.job }}), above %s for %s: the CPU clocks down when idle (power-saving BIOS or governor settings).' % [
            (if c.cpuLowLoadMedianSeconds == d.cpuLowLoadMedianSeconds then "vcpuperf's %g us limit" else 'the configured limit of %g us')
            % (c.cpuLowLoadMedianSeconds * 1e6),
            p.words(c.forMedium),
          ],
          c.forMedium, { signal: 'low_load_median' }),
        a('HostperfCpuLowLoadThrottling',
          p.hostLabels(c, '%s > %g' % [m('hostperf_cpu_throttle_ratio'), c.cpuThrottleRatio]),
          'warning', 'CPU low-load throttling on {{ $labels.instance }}',
          'The ~70 us task takes {{ $value | printf "%%.2f" }} times longer after an idle gap than under load on {{ $labels.instance }} (job {{ $labels.job }}), above %g for %s: the CPU clocks down when idle (power-saving BIOS or governor settings).' % [c.cpuThrottleRatio, p.words(c.forMedium)],
          c.forMedium, { signal: 'throttle_ratio' }),
        // One core of the host is slow: the exporter names it (hostperf_cpu_core_outlier,
        // from its pinned low-load medians against its siblings'), one alert per core.
        a('HostperfCpuCoreSlow',
          p.hostLabels(c, |||
            %s
              and on(instance, job, cpu)
            (%s == 1)
          ||| % [m('hostperf_cpu_core_task_ratio'), m('hostperf_cpu_core_outlier')]),
          'warning', 'CPU core {{ $labels.cpu }} slow on {{ $labels.instance }}',
          'Core {{ $labels.cpu }} of {{ $labels.instance }} (job {{ $labels.job }}) runs the low-load task {{ $value | printf "%%.1f" }}× slower than its {{ with printf "count(%s{instance=%%q, job=%%q}) - 1" $labels.instance $labels.job | query }}{{ . | first | value }}{{ end }} siblings (median of its pinned low-load timings against theirs), above probes.cpu.core_outlier_ratio for %s: an interrupt or real-time load pinned there, thermal throttling of its package, or a failing core.' % ['hostperf_cpu_core_task_median_seconds', p.words(c.forMedium)],
          c.forMedium),
        a('HostperfCpuWorkloadChecksumErrors',
          p.hostLabels(c, 'increase(%s[%s]) > 0' % [m('hostperf_cpu_workload_errors_total'), c.errorWindow]),
          'critical', 'CPU computed a wrong result on {{ $labels.instance }}',
          'The checksum-verified CPU workload on {{ $labels.instance }} (job {{ $labels.job }}) produced a wrong checksum in the last %s (hostperf_cpu_workload_errors_total rose): the CPU or memory returns wrong results. Take the host out of the cluster.' % p.words(c.errorWindow)),
        a('HostperfCpuSlowerThanBaseline',
          'hostperf:cpu_baseline_ratio:by_binary > %g' % c.baselineRatio.cpu,
          'warning', 'CPU slower than its own baseline on {{ $labels.instance }}',
          'The scheduled CPU workload on {{ $labels.instance }} (job {{ $labels.job }}) takes {{ $value | printf "%%.2f" }} times the CPU time of this binary\'s baseline (fingerprint {{ $labels.fingerprint }}), above %g for %s.' % [c.baselineRatio.cpu, p.words(c.forLong)],
          c.forLong),
        // Only where at least fleetMinHosts hosts run the same binary on the same CPU model.
        a('HostperfCpuSlowerThanFleet',
          |||
            hostperf:cpu_workload_cpu_seconds:fleet_ratio > %(r)g
              and on(%(f)s, fingerprint, cpu_model)
            hostperf_fleet:cpu_workload_cpu_seconds:count >= %(n)d
          ||| % { r: c.cpuFleetRatio, f: c.fleetLabel, n: c.fleetMinHosts },
          'warning', 'CPU slower than its fleet on {{ $labels.instance }}',
          'The scheduled CPU workload on {{ $labels.instance }} takes {{ $value | printf "%%.2f" }} times the median CPU time of the hosts of %s {{ $labels.%s }} that run the same binary (fingerprint {{ $labels.fingerprint }}) on the same CPU model ({{ $labels.cpu_model }}), above %g for %s.' % [c.fleetLabel, c.fleetLabel, c.cpuFleetRatio, p.words(c.forLong)],
          c.forLong),
      ],
    }],
  },
}
