local p = import '../lib/promql.libsonnet';
// The inputs of the baselineWindow (7d) medians, sampled every
// baselineSampleInterval. A median over a week of a series recorded at every
// evaluation reads 10 080 samples a series at a 1m interval (40 320 at 15 s):
// at 1000 hosts hundreds of millions of samples each round, more CPU than the
// interval has (docs/benchmarks.md, rule evaluation). The probes behind them
// run every 15 minutes, so a sample per 15 minutes loses nothing: 672 a week.
{
  prometheusRules+:: {
    local c = $._config,
    groups+: [{
      name: 'hostperf-baseline-samples',
      [if c.baselineSampleInterval != '' then 'interval']: c.baselineSampleInterval,
      rules: [
        { record: 'hostperf:disk_throughput_bytes_per_second:smoothed_sampled', expr: 'hostperf:disk_throughput_bytes_per_second:smoothed' },
        { record: 'hostperf:disk_op_latency_seconds:p99_1h_sampled', expr: 'hostperf:disk_op_latency_seconds:p99_1h' },
        { record: 'hostperf:memory_bandwidth_bytes_per_second:by_binary_sampled', expr: 'hostperf:memory_bandwidth_bytes_per_second:by_binary' },
      ],
    }],
  },
}
