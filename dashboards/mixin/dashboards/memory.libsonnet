local g = import 'lib.libsonnet';
local c = g.colors;

function(config)
  local SEL = g.selectors(config).host;
  local FLEET = g.selectors(config).fleet;
  local t = config.dashboardThresholds;
  g.dashboard(config, 'hostperf-memory', 'hostperf / Memory',
              'STREAM memory bandwidth: one-thread scheduled runs against their per-binary baseline, and full '
              + 'all-core runs.', ['hostperf', 'memory'], [
    g.row('Bandwidth'),
    g.timeseries('One-thread bandwidth by kernel', 'Best rate of the last scheduled run (one thread).',
                 [g.target('hostperf_memory_bandwidth_bytes_per_second{threads="1", %s}' % SEL,
                           '{{instance}} {{kernel}}')], 'binBps', min=0),
    g.timeseries('Ratio to own baseline', 'One-thread bandwidth / its median of the last week for this binary. '
                                          + 'Alert below 0.8 for an hour.',
                 [g.target('hostperf:memory_bandwidth_bytes_per_second:baseline_ratio{%s}' % SEL,
                           '{{instance}} {{kernel}}')], 'percentunit',
                 g.steps(c.red, [[t.memoryBaselineRatio, c.green]]), min=0),
    g.timeseries('Bandwidth by thread count', 'Best rate of the last run by thread count: 1 for scheduled runs, '
                                              + 'one per physical core for full runs (hostperf memory, the run API).',
                 [g.target('hostperf_memory_bandwidth_bytes_per_second{%s}' % SEL,
                           '{{instance}} {{kernel}} {{threads}} threads')], 'binBps', min=0),
    g.timeseries('Fleet median (one thread)', 'Median one-thread bandwidth of the fleet\'s hosts per kernel and '
                                              + 'binary fingerprint.',
                 [g.target('quantile by (fleet, kernel, fingerprint) (0.5, %s)'
                           % g.fleetOf(config, 'hostperf:memory_bandwidth_bytes_per_second:by_binary{threads="1", %s}' % FLEET),
                           '{{fleet}} {{kernel}} {{fingerprint}}')], 'binBps', min=0),
    g.row('Validity'),
    g.stat('Cache resident', '1: the arrays were not proven larger than 4x the LLC; the bandwidth may be cache '
                             + 'bandwidth.',
           [g.target('hostperf_memory_cache_resident{%s}' % SEL, '{{instance}} {{threads}} threads', instant=true)],
           'none', g.steps(c.green, [[1, c.yellow]]), w=8,
           mappings=g.valueMap({ '0': ['memory', null], '1': ['cache?', null] })),
    g.timeseries('Array size', 'Total size of the three STREAM arrays of the last run.',
                 [g.target('hostperf_memory_array_bytes{%s}' % SEL, '{{instance}} {{threads}} threads')], 'bytes', w=8),
    g.timeseries('Validation errors (1h)', 'STREAM runs whose results failed validation. Any is critical.',
                 [g.target('increase(hostperf_memory_validation_errors_total{%s}[1h])' % SEL, '{{instance}}')],
                 'none', g.steps(c.green, [[1, c.red]]), w=8, min=0),
  ])
