// The mixin's settings. Override any field with `_config+:: {...}` (see the
// README, "Using the mixin"). The dashboards import this file too: the field
// names are a contract, keep them stable.
{
  _config+:: {
    // Label matchers (without braces) added to every hostperf metric the
    // rules select, e.g. 'job="hostperf"'. Empty: every series.
    hostperfSelector: '',

    // Fleet: the hosts compared with each other and aggregated together.
    // A series without the fleet label is grouped by the fallback label (its
    // value is copied into the fleet label, so every alert carries it).
    fleetLabel: 'cluster',
    fleetFallbackLabel: 'job',
    // The host label every alert carries: derived from `instance` (the host's
    // own exporter) and from `peer` (its observers' view), so both name the
    // same host. The regex's first group is the host; a value that does not
    // match is taken whole.
    hostLabel: 'host',
    hostFromInstanceRegex: '(.+):[0-9]+',
    // The observer's host on per-link alerts.
    observerLabel: 'observer',

    // %s is the alert name in lower case (the section anchor in docs/runbooks.md).
    runbookURLPattern: 'https://github.com/hostperf/hostperf/blob/main/docs/runbooks.md#%s',

    // --- thresholds (docs/thresholds.md); MiB = 1048576 bytes -----------------
    diskPerCoreMinimumBytes: 20 * 1048576,  // vioperf: required per physical core
    diskPerCoreRecommendedBytes: 40 * 1048576,  // vioperf: recommended
    diskTests: 'Write|Read',  // vioperf's thresholds: ReWrite and SkipRead do not count
    diskLatencyRegressionFactor: 2,
    diskLatencyFloorSeconds: 0.001,
    // A member of the array behind a directory whose time per operation is
    // this many times its siblings' median (the probe's member_slow_ratio).
    diskMemberSlowRatio: 2,
    rttMaxSeconds: 1e-3,  // vnetperf: maximum recommended median RTT
    rttIdealSeconds: 200e-6,  // vnetperf: ideal
    clockSkewMaxSeconds: 1,  // vnetperf
    tcpMinBytes: 100 * 1048576,  // vnetperf: minimum TCP throughput (full runs)
    tcpIdealBytes: 800 * 1048576,  // vnetperf: ideal
    lossRatio: 0.01,  // UDP ping loss above which a link counts as lossy
    burstCapRatio: 0.5,  // a scheduled burst below this share of its cap is low
    minObservers: 2,  // a host-level network alert needs at least this many observers agreeing
    fleetRatio: 0.7,  // disk: below 70 % of the fleet median (gpcheckperf: 365 / 620)
    fleetMinHosts: 3,  // a fleet comparison needs at least this many hosts
    baselineRatio: { disk: 0.7, memory: 0.8, cpu: 1.2 },  // cpu: CPU time ratio above
    cpuFleetRatio: 1.2,
    cpuLowLoadMedianSeconds: 200e-6,  // vcpuperf
    cpuThrottleRatio: 2,
    cpuCoreOutlierRatio: 1.5,  // probes.cpu.core_outlier_ratio's default (the exporter names the core)
    probeStaleIntervals: 3,

    // --- time windows: every range and `for:` of the rules. A simulation with
    // accelerated probes overrides only these. --------------------------------
    rateWindow: '5m',  // RTT histograms per link
    lossWindow: '10m',  // UDP ping loss per link
    // HostperfNetInterfaceErrors: interface error counters that grew during
    // the probe's own bursts over this window. rx_dropped is left out: an
    // inactive bond member and unknown protocols count into it on healthy hosts.
    interfaceErrorsWindow: '30m',
    interfaceErrorsIgnored: 'rx_dropped',
    burstWindow: '1h',  // latest scheduled throughput burst per link (bursts rotate)
    smoothWindow: '1h',  // scheduled disk bursts: their median before comparing
    baselineWindow: '7d',  // a host's own baseline (median)
    latencyWindow: '1h',  // disk op-latency p99
    errorWindow: '1h',  // integrity error counters
    exporterSeenWindow: '1d',  // a target that served hostperf metrics this recently
    forExporterDown: '5m',
    forShort: '5m',  // net host-level, clock skew, config reload
    forMedium: '15m',  // link alerts, CPU throttling, full-run figures
    forLong: '30m',  // CPU baseline / fleet, throughput low
    forVeryLong: '1h',  // disk and memory regressions, disk fleet
  },
}
