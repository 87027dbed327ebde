local g = import 'lib.libsonnet';
local c = g.colors;

// The fleet at a glance: who sees whom how fast, which hosts their observers
// cannot reach, and the worst hosts of each kind against their own fleet.
function(config)
  local s = g.selectors(config);
  local SEL = s.host;
  local FLEET = s.fleet;
  local t = config.dashboardThresholds;
  local n = config.worstHosts;
  local RTT = g.steps(c.green, [[t.rttIdealSeconds, c.yellow], [t.rttMaxSeconds, c.red]]);
  local TCP = g.steps(c.red, [[t.tcpMinBytesPerSecond, c.yellow], [t.tcpIdealBytesPerSecond, c.green]]);
  local DISK = g.steps(c.red, [[t.diskMinBytesPerCore, c.yellow], [t.diskRecommendedBytesPerCore, c.green]]);
  local LOW_LOAD = g.steps(c.green, [[t.lowLoadIdealSeconds, c.yellow], [t.lowLoadMaxSeconds, c.red]]);
  // most observers (over half) down: red; any: yellow
  local DOWN_SHARE = g.steps(c.green, [[0.01, c.yellow], [0.5, c.red]]);

  // Median RTT of each observer (instance) to each peer over 5 minutes.
  local rttMedian(sel) =
    'histogram_quantile(0.5, sum by (instance, peer, le) (rate(hostperf_net_rtt_seconds_bucket{%s}[5m])))' % sel;
  // Label `to` := the host in label `from` (the whole value where the regex does not match), so an
  // observer (instance, its exporter) and an observed host (peer, its responder) read the same.
  local hostOf(expr, from, to) =
    'label_replace(label_replace(%s, "%s", "$1", "%s", "(.*)"), "%s", "$1", "%s", "%s")'
    % [expr, to, from, to, from, config.hostFromInstanceRegex];
  // Per host (peer label): observers that see it down, and all its observers.
  local observersDown = 'sum by (peer) (hostperf_net_peer_up{%s} == bool 0)' % FLEET;
  local observers = 'count by (peer) (hostperf_net_peer_up{%s})' % FLEET;
  // Scheduled Write/Read per directory, labelled with its role, device class
  // (absent from older exporters: the empty value groups them) and fleet.
  local diskByRole(sel) = g.fleetOf(config,
    'hostperf_disk_throughput_bytes_per_second{test=~"Write|Read", %s} * on(instance, job, directory) group_left(role, device_class) hostperf_disk_directory_info{%s}'
    % [sel, sel]);
  local diskFleetRatio = '%s / on(fleet, role, device_class, test) group_left quantile by (fleet, role, device_class, test) (0.5, %s)'
                         % [diskByRole(SEL), diskByRole(FLEET)];

  g.dashboard(config, 'hostperf-fleet', 'hostperf / Fleet',
              'The fleet at a glance: the observer × peer RTT matrix, each host as its observers see it, the '
              + 'worst hosts for disk, network and CPU against their own fleet, and full runs.',
              ['hostperf', 'fleet'], [
    g.row('Network: each host as its observers see it'),
    g.table('RTT matrix (median over 5 minutes)',
            'Rows: observers; columns: the peers each one probes (a stable set of about K peers per host, so the '
            + 'matrix is sparse). Ideal 200 us or less (yellow above), maximum 1000 us (red above).',
            [g.target(hostOf(hostOf(rttMedian(SEL), 'instance', 'observer'), 'peer', 'host'), instant=true,
                      format='table')], 's', RTT, w=24, h=12, cellType='color-background',
            extra=[{ id: 'groupingToMatrix', options: { columnField: 'host', rowField: 'observer', valueField: 'Value' } }]),
    g.table('Observers down per host',
            'For each host (peer), how many of the hosts that observe it saw it down in their last pings, out of '
            + 'all its observers. Most observers down: the host (or its responder) is down, not a link.',
            [g.target(hostOf(observersDown, 'peer', 'host'), instant=true, format='table'),
             g.target(hostOf(observers, 'peer', 'host'), instant=true, format='table', ref='B'),
             g.target(hostOf('%s / %s' % [observersDown, observers], 'peer', 'host'), instant=true, format='table',
                      ref='C')],
            'none', w=12, h=10, merge=true, sortBy=['share down', true], hide=['Time'],
            rename={ 'Value #A': 'observers down', 'Value #B': 'observers',
                     'Value #C': 'share down' },
            overrides=[g.columnOverride('share down', 'percentunit', DOWN_SHARE, 'color-background')]),
    g.table('Peer sets per host',
            'Peers each host knows (configured), probes (its stable set) and is observed by.',
            [g.target('hostperf_net_peers{%s}' % SEL, instant=true, format='table')], 'none', w=12, h=10,
            extra=[{ id: 'groupingToMatrix', options: { columnField: 'set', rowField: 'instance', valueField: 'Value' } }]),

    g.row('Worst hosts'),
    g.table('Disk: slowest vs fleet median of the same role',
            'Scheduled Write and Read throughput / the median of the fleet\'s directories with the same role '
            + 'and device class (hostperf_disk_directory_info), lowest %d. Below 0.7: much slower than its peers.' % n,
            [g.target('bottomk(%d, %s)' % [n, diskFleetRatio], instant=true, format='table')], 'percentunit',
            g.steps(c.red, [[t.diskFleetRatio, c.green]]), w=8, h=10, cellType='color-background',
            sortBy=['vs fleet median', false], hide=['Time', 'job', 'fleet', config.fleetLabel],
            rename={ Value: 'vs fleet median' }),
    g.table('Network: worst median RTT as seen by observers',
            'Per host, the median over its observers of their median RTT to it (5 minutes), highest %d.' % n,
            [g.target(hostOf('topk(%d, quantile by (peer) (0.5, %s))' % [n, rttMedian(FLEET)], 'peer', 'host'),
                      instant=true, format='table')], 's', RTT, w=8, h=10, cellType='color-background',
            sortBy=['median RTT', true], hide=['Time'], rename={ Value: 'median RTT' }),
    g.table('Network: most observers down',
            'Per host, the share of its observers that see it down, highest %d.' % n,
            [g.target(hostOf('topk(%d, %s / %s)' % [n, observersDown, observers], 'peer', 'host'), instant=true,
                      format='table')],
            'percentunit', DOWN_SHARE, w=8, h=10, cellType='color-background', sortBy=['share down', true],
            hide=['Time'], rename={ Value: 'share down' }),
    g.table('CPU: slowest vs own baseline',
            'Scheduled workload CPU time / this binary\'s baseline, highest %d. Above 1.2: slower than it was.' % n,
            [g.target('topk(%d, hostperf_cpu_baseline_ratio{%s})' % [n, SEL], instant=true, format='table')],
            'none', g.steps(c.green, [[t.baselineRatio, c.red]]), w=12, h=10, cellType='color-background',
            sortBy=['vs baseline', true], hide=['Time', '__name__', 'job', config.fleetLabel],
            rename={ Value: 'vs baseline' }),
    g.table('CPU: most throttled',
            'Low-load task median / high-load median, highest %d. Above 2: power-saving throttling.' % n,
            [g.target('topk(%d, hostperf_cpu_throttle_ratio{%s})' % [n, SEL], instant=true, format='table')],
            'none', g.steps(c.green, [[t.throttleRatio, c.red]]), w=12, h=10, cellType='color-background',
            sortBy=['throttle ratio', true], hide=['Time', '__name__', 'job', config.fleetLabel],
            rename={ Value: 'throttle ratio' }),

    g.row('Full runs (the documented thresholds)'),
    g.table('Full runs per host',
            'When each host\'s last full-strength run finished, when its next calendar run is due, and its '
            + 'probes whose last full run failed.',
            [g.target('max by (instance) (hostperf_full_run_last_timestamp_seconds{%s}) * 1000' % SEL,
                      instant=true, format='table'),
             g.target('min by (instance) (hostperf_full_run_next_timestamp_seconds{%s}) * 1000' % SEL,
                      instant=true, format='table', ref='B'),
             g.target('sum by (instance) (hostperf_full_run_success{%s} == bool 0)' % SEL, instant=true,
                      format='table', ref='C')],
            'none', w=24, h=10, merge=true, hide=['Time'],
            rename={ 'Value #A': 'last full run', 'Value #B': 'next full run', 'Value #C': 'probes failed' },
            overrides=[g.columnOverride('last full run', 'dateTimeFromNow'),
                       g.columnOverride('next full run', 'dateTimeFromNow'),
                       g.columnOverride('probes failed', 'none', g.steps(c.green, [[1, c.red]]), 'color-background')]),
    g.bargauge('Full-run disk per physical core (worst directory)',
               'Lowest Write or Read per physical core of the last full run. Minimum 20 MB/s (red below), '
               + 'recommended 40 (yellow below).',
               [g.target('min by (instance) (hostperf_full_run_figure{probe="disk", figure=~"write_bytes_per_second_per_core|read_bytes_per_second_per_core", %s})'
                         % SEL, '{{instance}}', instant=true)], 'binBps', DISK, w=6, min=0),
    g.bargauge('Full-run TCP throughput (worst peer)',
               'Best rate of the ladder to the slowest peer in the last full run (uncapped). Minimum 100 MB/s '
               + '(red below), ideal 800 (yellow below).',
               [g.target('min by (instance) (hostperf_full_run_figure{probe="net", figure="tcp_throughput_bytes_per_second", %s})'
                         % SEL, '{{instance}}', instant=true)], 'binBps', TCP, w=6, min=0),
    g.bargauge('Full-run RTT (worst peer)',
               'Highest peer RTT of the last full run. Ideal 200 us or less (yellow above), maximum 1000 us (red above).',
               [g.target('max by (instance) (hostperf_full_run_figure{probe="net", figure="rtt_seconds", %s})' % SEL,
                         '{{instance}}', instant=true)], 's', RTT, w=6, min=0),
    g.bargauge('Full-run low-load task median',
               'Low-load task median of the last full CPU run. Above 200 us: throttling (vcpuperf).',
               [g.target('max by (instance) (hostperf_full_run_figure{probe="cpu", figure="low_load_median_seconds", %s})'
                         % SEL, '{{instance}}', instant=true)], 's', LOW_LOAD, w=6, min=0),
  ])
