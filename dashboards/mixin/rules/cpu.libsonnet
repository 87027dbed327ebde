local p = import '../lib/promql.libsonnet';
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    groups+: [{
      name: 'hostperf-cpu-recording',
      rules: [
        // Scheduled workload CPU time labelled with the binary fingerprint and the
        // CPU model: vcpuperf's numbers only compare within one binary and model.
        {
          record: 'hostperf:cpu_workload_cpu_seconds:by_binary',
          expr: p.hostLabels(c, |||
            %s
              * on(instance, job) group_left(fingerprint) %s
              * on(instance, job) group_left(cpu_model) %s
          ||| % [m('hostperf_cpu_workload_cpu_seconds', 'mode="scheduled"'), m('hostperf_build_info'), m('hostperf_host_info')]),
        },
        {
          record: 'hostperf_fleet:cpu_workload_cpu_seconds:median',
          expr: 'quantile by (%s, fingerprint, cpu_model) (0.5, hostperf:cpu_workload_cpu_seconds:by_binary)' % c.fleetLabel,
        },
        {
          record: 'hostperf_fleet:cpu_workload_cpu_seconds:count',
          expr: 'count by (%s, fingerprint, cpu_model) (hostperf:cpu_workload_cpu_seconds:by_binary)' % c.fleetLabel,
        },
        {
          record: 'hostperf:cpu_workload_cpu_seconds:fleet_ratio',
          expr: |||
            hostperf:cpu_workload_cpu_seconds:by_binary
              / on(%(f)s, fingerprint, cpu_model) group_left()
            (hostperf_fleet:cpu_workload_cpu_seconds:median > 0)
          ||| % { f: c.fleetLabel },
        },
        // The daemon's own per-binary baseline ratio, labelled with the fingerprint.
        {
          record: 'hostperf:cpu_baseline_ratio:by_binary',
          expr: p.hostLabels(c, |||
            %s
              * on(instance, job) group_left(fingerprint) %s
          ||| % [m('hostperf_cpu_baseline_ratio'), m('hostperf_build_info')]),
        },
      ],
    }],
  },
}
