// Dashboard settings. dashboards.libsonnet merges the shared mixin settings
// (../config.libsonnet) over this file, so the fields below that the shared
// file also defines (selector, fleet labels, thresholds) are only fallbacks;
// dashboardThresholds reads the merged values through `$`.
{
  // --- fallbacks of the shared _config -------------------------------------
  hostperfSelector: '',
  fleetLabel: 'cluster',
  fleetFallbackLabel: 'job',
  exporterSelector: 'job="hostperf"',
  cpuLowLoadMedianSeconds: 200e-6,
  cpuThrottleRatio: 2,
  baselineRatio: { disk: 0.7, memory: 0.8, cpu: 1.2 },
  cpuFleetRatio: 1.2,
  diskPerCoreMinimumBytes: 20 * 1048576,
  diskPerCoreRecommendedBytes: 40 * 1048576,
  fleetRatio: 0.7,
  rttIdealSeconds: 200e-6,
  rttMaxSeconds: 1e-3,
  clockSkewMaxSeconds: 1,
  tcpMinBytes: 100 * 1048576,
  tcpIdealBytes: 800 * 1048576,
  lossRatio: 0.01,
  burstCapRatio: 0.5,
  probeStaleIntervals: 3,
  sidecarCpuMaxCores: 0.02,
  sidecarMemoryMaxBytes: 64 * 1048576,
  sidecarBudgetFullRatio: 0.9,
  // The host in `instance` (its exporter) and in `peer` (its responder): the
  // first group; a value that does not match is taken whole.
  hostFromInstanceRegex: '(.+):[0-9]+',

  // --- dashboard-only ------------------------------------------------------
  // Rows in the fleet view's worst-hosts tables.
  worstHosts: 10,
  // The colour steps of the panels (docs/thresholds.md; MB = 2^20 bytes).
  dashboardThresholds: {
    lowLoadIdealSeconds: 100e-6,  // vcpuperf: yellow above
    lowLoadMaxSeconds: $.cpuLowLoadMedianSeconds,
    throttleRatio: $.cpuThrottleRatio,
    coreOutlierRatio: $.cpuCoreOutlierRatio,
    baselineRatio: $.baselineRatio.cpu,
    cpuFleetRatio: $.cpuFleetRatio,
    diskMinBytesPerCore: $.diskPerCoreMinimumBytes,
    diskRecommendedBytesPerCore: $.diskPerCoreRecommendedBytes,
    diskFleetRatio: $.fleetRatio,
    diskMemberSlowRatio: $.diskMemberSlowRatio,
    rttIdealSeconds: $.rttIdealSeconds,
    rttMaxSeconds: $.rttMaxSeconds,
    clockOffsetSeconds: $.clockSkewMaxSeconds,
    tcpMinBytesPerSecond: $.tcpMinBytes,
    tcpIdealBytesPerSecond: $.tcpIdealBytes,
    // Scheduled bursts are capped (probes.net.throughput_rate): judged as a share of the cap.
    burstCapRatioMin: $.burstCapRatio,
    burstCapRatioWarn: 0.9,
    pingLossRatio: $.lossRatio,
    udpLossRatio: 0.05,
    memoryBaselineRatio: $.baselineRatio.memory,
    staleIntervalsWarn: 1.5,
    staleIntervals: $.probeStaleIntervals,
    sidecarCpuMaxCores: $.sidecarCpuMaxCores,
    sidecarMemoryMaxBytes: $.sidecarMemoryMaxBytes,
    sidecarBudgetFullRatio: $.sidecarBudgetFullRatio,
  },
}
