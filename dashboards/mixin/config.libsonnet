// The mixin's settings. Override any field with `_config+:: {...}` (see
// docs/mixin.md, "Using the mixin"). The dashboards import this file too: the field
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
    // The scrape targets that must be up (HostperfExporterDown) and whose
    // `instance` is a host's canonical name (the host label of every alert):
    // label matchers without braces, on Prometheus' `up`.
    exporterSelector: 'job="hostperf"',
    // Topology: the scrape targets' rack label (file_sd labels). Per-link
    // series carry the target's rack as rackLabel and the observer's as
    // observer_<rackLabel>; HostperfNetRackPairDegraded names rack pairs.
    // Targets without it form one rack-less group (no rack-pair alerts).
    rackLabel: 'rack',

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
    // A (fleet, role, device_class, test) group of 2 .. fleetMinHosts-1 hosts
    // compares each directory with the fastest of the group (with 2 hosts:
    // its only peer), below fleetRatio; a lone host has its own baseline only.
    // HostperfDiskClusterSlowerThanBaseline: at least this share of a group's
    // hosts (and fleetMinHosts) below baselineRatio.disk of their own baseline
    // is one cluster-wide fault; their host alerts are suppressed.
    clusterShare: 0.5,
    // HostperfSidecarOverBudget: what the sidecar promises (docs/operator-guide.md,
    // "Impact budget"; docs/benchmarks.md). The whole process's CPU over sidecarWindow:
    // measured 0.5 % of one core at the defaults, the probes capped at 1 %
    // (budget.cpu_seconds_per_hour = 36 s); 2 % leaves room for scrapes and
    // the responder. Resident memory: its minimum over sidecarWindow (STREAM's
    // arrays, probes.memory.memory_budget, come and go with each run): 17 MiB
    // measured, 20 MiB the target. A budget counts as spent at this share of
    // its limit (a disk run or burst that does not fit is skipped, so the
    // bytes used stay just below the limit).
    sidecarCpuMaxCores: 0.02,
    sidecarMemoryMaxBytes: 64 * 1048576,
    sidecarBudgetFullRatio: 0.9,
    baselineRatio: { disk: 0.7, memory: 0.8, cpu: 1.2 },  // cpu: CPU time ratio above
    cpuFleetRatio: 1.2,
    cpuLowLoadMedianSeconds: 200e-6,  // vcpuperf
    cpuThrottleRatio: 2,
    cpuCoreOutlierRatio: 1.5,  // probes.cpu.core_outlier_ratio's default (the exporter names the core)
    probeStaleIntervals: 3,
    // HostperfExporterDown also fires for a target up less than this share of
    // flapWindow's scrapes that went down and up again at least twice.
    exporterFlapUpRatio: 0.9,

    // --- time windows: every range and `for:` of the rules. A simulation with
    // accelerated probes overrides only these. --------------------------------
    rateWindow: '5m',  // RTT histograms per link
    lossWindow: '10m',  // UDP ping loss per link
    // A host unreachable at least twice within this window (three changes of
    // hostperf_host:net_unreachable:bool) while most observers lose pings is
    // flapping; a host unreachable at any evaluation in it raises no loss
    // alert (its loss is the outage's). At least twice lossWindow.
    flapWindow: '30m',
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
    // Every rule group's `interval`: the probes change their series every 30 s
    // (net) to 15 min (disk), and at 1000 hosts the network recording rules
    // cost over half of a 15 s interval in CPU (docs/benchmarks.md). '' leaves
    // the groups on Prometheus' global evaluation_interval.
    ruleEvaluationInterval: '1m',
    // The interval of the group that samples the baselines' inputs
    // (rules/baselines.libsonnet); '' leaves it on ruleEvaluationInterval.
    baselineSampleInterval: '15m',
    // The interval of the long-window group (rules/baselines.libsonnet: the
    // disk op-latency p99 over latencyWindow and the baselineWindow medians,
    // whose inputs change every 15 minutes), under Prometheus' 5-minute
    // look-back so that its series never gap between evaluations. '' leaves
    // it on ruleEvaluationInterval.
    longWindowInterval: '4m',
    forExporterDown: '5m',
    forShort: '5m',  // net host-level, clock skew, config reload
    forMedium: '15m',  // link alerts, CPU throttling, full-run figures
    forLong: '30m',  // CPU baseline / fleet, throughput low
    forVeryLong: '1h',  // disk and memory regressions, disk fleet
    sidecarWindow: '1h',  // the sidecar's CPU share and resident memory floor
  },
}
