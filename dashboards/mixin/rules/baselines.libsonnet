local p = import '../lib/promql.libsonnet';
// Rules over long windows, in two groups of their own with longer intervals:
// at 1000 hosts, evaluated every minute, they cost more than the rest of the
// rules together (docs/benchmarks.md, rule evaluation). Their inputs come
// from the disk and memory probes, which run every 15 minutes.
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    groups+: [{
      // The inputs of the baselineWindow (7d) medians, sampled every
      // baselineSampleInterval: a median over a week of a series recorded
      // every minute reads 10 080 samples a series; a sample per 15 minutes
      // loses nothing (672 a week).
      name: 'hostperf-baseline-samples',
      [if c.baselineSampleInterval != '' then 'interval']: c.baselineSampleInterval,
      rules: [
        { record: 'hostperf:disk_throughput_bytes_per_second:smoothed_sampled', expr: 'hostperf:disk_throughput_bytes_per_second:smoothed' },
        { record: 'hostperf:disk_op_latency_seconds:p99_1h_sampled', expr: 'hostperf:disk_op_latency_seconds:p99_1h' },
        { record: 'hostperf:memory_bandwidth_bytes_per_second:by_binary_sampled', expr: 'hostperf:memory_bandwidth_bytes_per_second:by_binary' },
      ],
    }, {
      // Every longWindowInterval (4 minutes, under the 5-minute look-back).
      name: 'hostperf-long-window-recording',
      [if c.longWindowInterval != '' then 'interval']: c.longWindowInterval,
      rules: [
        // Op-latency p99 over latencyWindow and its baseline (median of the
        // p99s). The names keep the default windows (1h, 7d) for the
        // dashboards. The bucket rate over an hour reads every scrape of it
        // (240 samples a bucket at 15 s): evaluated here every 4 minutes,
        // not every minute, as the probe behind it runs every 15.
        {
          record: 'hostperf:disk_op_latency_seconds:p99_1h',
          expr: 'histogram_quantile(0.99, rate(%s[%s]))' % [m('hostperf_disk_op_latency_seconds_bucket'), c.latencyWindow],
        },
        {
          record: 'hostperf:disk_op_latency_seconds:p99_1h_baseline_7d',
          expr: 'quantile_over_time(0.5, hostperf:disk_op_latency_seconds:p99_1h_sampled[%s])' % c.baselineWindow,
        },
        // The host's own disk baseline per directory and test, and the
        // per-host, per-binary memory baseline: the medians of baselineWindow.
        {
          record: 'hostperf:disk_throughput_bytes_per_second:baseline',
          expr: 'quantile_over_time(0.5, hostperf:disk_throughput_bytes_per_second:smoothed_sampled[%s])' % c.baselineWindow,
        },
        {
          record: 'hostperf:memory_bandwidth_bytes_per_second:baseline_7d',
          expr: 'quantile_over_time(0.5, hostperf:memory_bandwidth_bytes_per_second:by_binary_sampled[%s])' % c.baselineWindow,
        },
      ],
    }],
  },
}
