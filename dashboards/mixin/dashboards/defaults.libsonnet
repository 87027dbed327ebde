// Dashboard defaults. The shared mixin _config (../config.libsonnet) wins over
// these where both define a field: dashboards.libsonnet merges it on top.
{
  // Extra label matchers every hostperf series carries (e.g. 'job="hostperf"'), '' for none.
  hostperfSelector: '',
  // The label that tells fleets apart (the `cluster` variable) and the label
  // grouped by where a series lacks it.
  fleetLabel: 'cluster',
  fleetFallbackLabel: 'job',
  // How far back "Exporters up" looks for targets that served hostperf, so a
  // target that went down stays listed (as down) instead of vanishing.
  exporterLookback: '1d',
  // Rows in the fleet view's worst-hosts tables.
  worstHosts: 10,
  // docs/thresholds.md, in base units (MB = 2^20 bytes). Only the dashboards read these.
  dashboardThresholds: {
    lowLoadIdealSeconds: 100e-6,
    lowLoadMaxSeconds: 200e-6,
    throttleRatio: 2,
    baselineRatio: 1.2,
    diskMinBytesPerCore: 20 * 1048576,
    diskRecommendedBytesPerCore: 40 * 1048576,
    diskFleetRatio: 0.7,
    rttIdealSeconds: 200e-6,
    rttMaxSeconds: 1e-3,
    clockOffsetSeconds: 1,
    tcpMinBytesPerSecond: 100 * 1048576,
    tcpIdealBytesPerSecond: 800 * 1048576,
    // Scheduled bursts are capped (probes.net.throughput_rate): judged as a share of the cap.
    burstCapRatioWarn: 0.9,
    burstCapRatioMin: 0.5,
    pingLossRatio: 0.01,
    udpLossRatio: 0.05,
    memoryBaselineRatio: 0.8,
    staleIntervalsWarn: 1.5,
    staleIntervals: 3,
  },
}
