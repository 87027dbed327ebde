local p = import '../lib/promql.libsonnet';
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    groups+: [{
      name: 'hostperf-memory-recording',
      rules: [
        // Scheduled (one-thread) STREAM bandwidth labelled with the binary
        // fingerprint: a new binary is a new series and so starts a new baseline.
        {
          record: 'hostperf:memory_bandwidth_bytes_per_second:by_binary',
          expr: p.hostLabels(c, |||
            %s
              * on(instance, job) group_left(fingerprint) %s
          ||| % [m('hostperf_memory_bandwidth_bytes_per_second', 'threads="1"'), m('hostperf_build_info')]),
        },
        // hostperf:memory_bandwidth_bytes_per_second:baseline_7d, the
        // per-host, per-binary baseline: rules/baselines.libsonnet.
        {
          record: 'hostperf:memory_bandwidth_bytes_per_second:baseline_ratio',
          expr: |||
            hostperf:memory_bandwidth_bytes_per_second:by_binary
              / (hostperf:memory_bandwidth_bytes_per_second:baseline_7d > 0)
          |||,
        },
        {
          record: 'job:hostperf_memory_bandwidth_bytes_per_second:median',
          expr: 'quantile by (job, kernel, fingerprint) (0.5, hostperf:memory_bandwidth_bytes_per_second:by_binary)',
        },
      ],
    }],
  },
}
