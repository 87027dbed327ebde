local g = import 'lib.libsonnet';
local c = g.colors;

function(config)
  local s = g.selectors(config);
  local SEL = s.host;
  local t = config.dashboardThresholds;
  local UP = g.steps(c.red, [[1, c.green]]);
  local upMap = g.valueMap({ '0': ['down', c.red], '1': ['up', c.green] });
  g.dashboard(config, 'hostperf-overview', 'hostperf / Overview',
              'Every host against every documented threshold (docs/thresholds.md): red breaks the minimum, '
              + 'yellow misses the recommendation.', ['hostperf'], [
    g.row('Health'),
    // `up` is there for every configured target, down or never served: the
    // targets HostperfExporterDown watches (exporterSelector), with no
    // look-back that a long outage would outlast.
    g.stat('Exporters up', 'Scrape status of every target of %s: up, down, or never served. ' % config.exporterSelector
                           + 'Alert: HostperfExporterDown.',
           [g.target('up{%s, %s}' % [config.exporterSelector, SEL], '{{instance}}', instant=true)],
           'none', UP, w=8, h=6, mappings=upMap),
    g.bargauge('Probe staleness (intervals since success)',
               'Seconds since each probe last succeeded, in probe intervals. %g or more: HostperfProbeStale.'
               % t.staleIntervals,
               [g.target('hostperf:probe_seconds_since_success{%s} / on(instance, job, probe) hostperf_probe_interval_seconds'
                         % SEL, '{{instance}} {{probe}}', instant=true)],
               'none', g.steps(c.green, [[t.staleIntervalsWarn, c.yellow], [t.staleIntervals, c.red]]), w=8, h=6, min=0),
    // Host-level and link alerts name hosts by `host`/`observer` and may have no
    // instance or job label: those match the empty value too.
    g.table('Firing hostperf alerts', 'Alerts from the hostperf rules now pending or firing (alerts about a '
                                      + 'host as its observers see it have no instance and are always listed).',
            [g.target('ALERTS{alertname=~"Hostperf.*", %s=~"$cluster", job=~"$job|", instance=~"$instance|"}'
                      % config.fleetLabel, instant=true, format='table')], 'none', w=8, h=6,
            hide=['Time', 'Value', '__name__']),
    g.timeseries('Probe run time', 'Wall-clock time of each probe\'s last run (scheduled runs are short bursts; '
                                   + 'a run past its timeout fails with reason timeout).',
                 [g.target('hostperf_probe_duration_seconds{%s}' % SEL, '{{instance}} {{probe}}')], 's', min=0),
    g.panel('state-timeline', 'Probe success', '1: the probe\'s last run succeeded; 0: it failed (see '
                                               + 'hostperf_probe_failures_total for the reason).',
            [g.target('hostperf_probe_success{%s}' % SEL, '{{instance}} {{probe}}')], 'none', UP,
            options={ showValue: 'never', mergeValues: true, rowHeight: 0.9 },
            mappings=g.valueMap({ '0': ['failed', c.red], '1': ['ok', c.green] })),

    g.row('CPU (vcpuperf)'),
    g.bargauge('Low-load task median', 'Median of the ~70 us task after an idle gap. Above 200 us: low-load '
                                       + 'throttling (vcpuperf).',
               [g.target('hostperf_cpu_task_median_seconds{load="low", %s}' % SEL, '{{instance}}', instant=true)],
               's', g.steps(c.green, [[t.lowLoadIdealSeconds, c.yellow], [t.lowLoadMaxSeconds, c.red]]), w=6, min=0),
    g.bargauge('Throttle ratio', 'Low-load median / high-load median. Above 2: power-saving throttling.',
               [g.target('hostperf_cpu_throttle_ratio{%s}' % SEL, '{{instance}}', instant=true)], 'none',
               g.steps(c.green, [[t.throttleRatio, c.red]]), w=6, min=0),
    g.bargauge('CPU time vs own baseline', 'Scheduled workload CPU time / this binary\'s baseline. Above 1.2: '
                                           + 'HostperfCpuSlowerThanBaseline.',
               [g.target('hostperf_cpu_baseline_ratio{%s}' % SEL, '{{instance}}', instant=true)], 'none',
               g.steps(c.green, [[t.baselineRatio, c.red]]), w=6, min=0),
    g.bargauge('CPU time vs fleet', 'Workload CPU time / median of the fleet\'s hosts with the same binary '
                                    + 'fingerprint and CPU model. Above 1.2: HostperfCpuSlowerThanFleet.',
               [g.target('hostperf:cpu_workload_cpu_seconds:fleet_ratio{%s}' % SEL, '{{instance}}', instant=true)],
               'none', g.steps(c.green, [[t.cpuFleetRatio, c.red]]), w=6, min=0),

    g.row('Disk (vioperf)'),
    // The scheduled burst (one thread, 64 MB, idle priority) cannot measure
    // capacity: only full runs are coloured against the per-core minimum.
    g.bargauge('Write and Read per physical core (last full run)',
               'Full-strength run, per directory, divided by physical cores. Minimum 20 MB/s per core (red '
               + 'below), recommended 40 (yellow below). Empty until a full run (calendar or run API).',
               [g.target('hostperf_full_run_figure{probe="disk", figure=~"write_bytes_per_second_per_core|read_bytes_per_second_per_core", %s}'
                         % SEL, '{{instance}} {{subject}} {{figure}}', instant=true)], 'binBps',
               g.steps(c.red, [[t.diskMinBytesPerCore, c.yellow], [t.diskRecommendedBytesPerCore, c.green]]),
               w=6, min=0),
    g.bargauge('Scheduled Write and Read per physical core',
               'Last scheduled burst per directory, divided by physical cores: a trend, not a capacity '
               + 'figure (one thread, small file, idle I/O priority), so not judged against 20/40 MB/s.',
               [g.target('hostperf:disk_throughput_per_core_bytes_per_second{test=~"Write|Read", %s}' % SEL,
                         '{{instance}} {{directory}} {{test}}', instant=true)], 'binBps', g.steps(c.blue), w=6,
               min=0),
    g.bargauge('Disk vs fleet median', 'Scheduled throughput / the fleet\'s median for the same test, '
                                       + 'directory role and device class. Below 0.7: one array much slower than its peers '
                                       + '(gpcheckperf: 365 vs 620 MB/s).',
               [g.target('hostperf:disk_throughput_bytes_per_second:fleet_ratio{test=~"Write|Read", %s}' % SEL,
                         '{{instance}} {{directory}} {{test}}', instant=true)], 'percentunit',
               g.steps(c.red, [[t.diskFleetRatio, c.green]]), w=6, min=0),
    g.bargauge('Verify errors (1h)', 'Blocks read back with a wrong CRC32C in the last hour. Any: critical.',
               [g.target('increase(hostperf_disk_verify_errors_total{%s}[1h])' % SEL, '{{instance}} {{directory}}',
                         instant=true)], 'none', g.steps(c.green, [[1, c.red]]), w=6, min=0),

    g.row('Network (vnetperf)'),
    g.bargauge('Worst peer RTT (median)', 'Highest median RTT to any peer. Ideal 200 us or less (yellow above), '
                                          + 'maximum 1000 us (red above).',
               [g.target('max by (instance) (hostperf:net_rtt_seconds:p50_5m{%s})' % SEL, '{{instance}}',
                         instant=true)], 's',
               g.steps(c.green, [[t.rttIdealSeconds, c.yellow], [t.rttMaxSeconds, c.red]]), w=6, min=0),
    g.bargauge('Worst clock offset', 'Largest absolute clock offset to any peer. Must stay under 1 s.',
               [g.target('max by (instance) (abs(hostperf_net_clock_offset_seconds{%s}))' % SEL, '{{instance}}',
                         instant=true)], 's', g.steps(c.green, [[t.clockOffsetSeconds, c.red]]), w=6, min=0),
    // Scheduled bursts are capped (32 MB/s by default, below the 100 MB/s
    // minimum): judged as a share of the cap, never against 100/800 MB/s.
    g.bargauge('Lowest TCP burst vs its cap',
               'Lowest scheduled TCP burst throughput to any peer / the burst cap '
               + '(hostperf_net_throughput_rate_limit_bytes_per_second, probes.net.throughput_rate). 100 %: the '
               + 'link carried the capped burst. Below 90 % yellow, below 50 % red. The 100/800 MB/s figures '
               + 'are judged on full runs (fleet view).',
               [g.target('min by (instance) (hostperf_net_tcp_throughput_bytes_per_second{%s} / on(instance, job) group_left hostperf_net_throughput_rate_limit_bytes_per_second{%s})'
                         % [SEL, SEL], '{{instance}}', instant=true)], 'percentunit',
               g.steps(c.red, [[t.burstCapRatioMin, c.yellow], [t.burstCapRatioWarn, c.green]]), w=6, min=0, max=1),
    g.bargauge('Peers down', 'Peers that did not answer the last pings.',
               [g.target('count by (instance) (hostperf_net_peer_up{%s} == 0) or on(instance) (0 * group by (instance) (hostperf_net_peer_up{%s}))'
                         % [SEL, SEL], '{{instance}}', instant=true)], 'none', g.steps(c.green, [[1, c.red]]), w=6,
               min=0),

    g.row('Memory (STREAM)'),
    g.bargauge('Bandwidth vs own baseline', 'One-thread STREAM bandwidth / its median of the last week for this '
                                            + 'binary. Below 0.8: HostperfMemoryBandwidthBelowBaseline.',
               [g.target('hostperf:memory_bandwidth_bytes_per_second:baseline_ratio{%s}' % SEL,
                         '{{instance}} {{kernel}}', instant=true)], 'percentunit',
               g.steps(c.red, [[t.memoryBaselineRatio, c.green]]), w=12, min=0),
    g.bargauge('Triad bandwidth (one thread)', 'Best one-thread STREAM triad rate of the last run.',
               [g.target('hostperf_memory_bandwidth_bytes_per_second{kernel="triad", threads="1", %s}' % SEL,
                         '{{instance}}', instant=true)], 'binBps', g.steps(c.blue), w=12, min=0),

    // What the sidecar costs its host (docs/operator-guide.md, "Impact budget"). process_*
    // families come from every client library: joined to hostperf's targets.
    g.row('Sidecar cost'),
    g.timeseries('Sidecar CPU (share of one core)',
                 'CPU time of the whole hostperf_exporter process (probes, scrapes, responder) per second. '
                 + 'About 0.5 %% of a core at the defaults; above %g %% over an hour: HostperfSidecarOverBudget.'
                 % (t.sidecarCpuMaxCores * 100),
                 [g.target('rate(process_cpu_seconds_total{%s}[$__rate_interval]) and on(instance, job) hostperf_build_info{%s}'
                           % [SEL, SEL], '{{instance}}')], 'percentunit',
                 g.steps(c.green, [[t.sidecarCpuMaxCores, c.red]]), w=6, min=0),
    g.timeseries('Sidecar resident memory',
                 'Resident set size of hostperf_exporter. Scheduled STREAM runs add their arrays '
                 + '(probes.memory.memory_budget) for the length of a run; a floor above %g MiB for an hour: '
                 % (t.sidecarMemoryMaxBytes / 1048576) + 'HostperfSidecarOverBudget.',
                 [g.target('process_resident_memory_bytes{%s} and on(instance, job) hostperf_build_info{%s}' % [SEL, SEL],
                           '{{instance}}')], 'bytes', g.steps(c.green, [[t.sidecarMemoryMaxBytes, c.red]]), w=6, min=0),
    g.bargauge('Budget used vs limit',
               'Each budget\'s use in the rolling hour / its limit (hostperf_budget_{cpu,disk,net}_used_* / _limit_*: '
               + 'budget.cpu_seconds_per_hour, disk_bytes_per_hour, net_bytes_per_hour). At the limit scheduled runs '
               + 'are skipped (budget_exhausted); %g %% or more for 30 minutes: HostperfSidecarOverBudget.'
               % (t.sidecarBudgetFullRatio * 100),
               [g.target('hostperf:sidecar_budget_used:ratio{%s}' % SEL, '{{instance}} {{resource}}', instant=true)],
               'percentunit', g.steps(c.green, [[0.7, c.yellow], [t.sidecarBudgetFullRatio, c.red]]), w=6, min=0,
               max=1),
    g.timeseries('Probe runs and failures per hour',
                 'Runs of each probe in the last hour (hostperf_probe_runs_total) and its failed runs '
                 + '(hostperf_probe_failures_total, all reasons; the overview\'s "Probe success" shows the last one).',
                 [g.target('increase(hostperf_probe_runs_total{%s}[1h])' % SEL, '{{instance}} {{probe}} runs'),
                  g.target('sum by (instance, job, probe) (increase(hostperf_probe_failures_total{%s}[1h]))' % SEL,
                           '{{instance}} {{probe}} failures', ref='B')], 'short', w=6, min=0),
  ])
