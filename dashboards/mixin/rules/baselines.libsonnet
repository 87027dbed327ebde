local p = import '../lib/promql.libsonnet';
// Rules over long windows, in two groups of their own with longer intervals:
// at 1000 hosts, evaluated every minute, they cost more than the rest of the
// rules together (docs/benchmarks.md, rule evaluation). Their inputs come
// from the disk and memory probes, which run every 15 minutes.
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    // The width of the latency histogram's increments: the group's interval,
    // so that consecutive increments tile the window.
    local tile = if c.longWindowInterval != '' then c.longWindowInterval else c.rateWindow,
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
        // The latency histogram's increments over the last `tile`, recorded
        // at every evaluation. Their sum over latencyWindow is the window's
        // histogram read from latencyWindow / tile samples a bucket instead of
        // every scrape of the hour (rate(...[1h]) read 240 a bucket at a 15 s
        // scrape: 48 M samples an evaluation at 1000 hosts). Counter resets
        // are handled inside each increment. Where the evaluations come more
        // often than `tile` (promtool, or longWindowInterval ''), the
        // increments overlap and the sum counts every operation about as
        // many times: the quantile of a histogram scaled as a whole is the
        // same.
        {
          record: 'hostperf:disk_op_latency_seconds_bucket:increase_tile',
          expr: 'increase(%s[%s])' % [m('hostperf_disk_op_latency_seconds_bucket'), tile],
        },
        // Op-latency p99 over latencyWindow and its baseline (median of the
        // p99s). The names keep the default windows (1h, 7d) for the dashboards.
        {
          record: 'hostperf:disk_op_latency_seconds:p99_1h',
          expr: 'histogram_quantile(0.99, sum_over_time(hostperf:disk_op_latency_seconds_bucket:increase_tile[%s]))' % c.latencyWindow,
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
