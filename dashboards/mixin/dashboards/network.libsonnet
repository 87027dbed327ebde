local g = import 'lib.libsonnet';
local c = g.colors;

function(config)
  local SEL = g.selectors(config).host;
  local t = config.dashboardThresholds;
  local RTT = g.steps(c.green, [[t.rttIdealSeconds, c.yellow], [t.rttMaxSeconds, c.red]]);
  local UP = g.steps(c.red, [[1, c.green]]);
  local upMap = g.valueMap({ '0': ['down', c.red], '1': ['up', c.green] });
  g.dashboard(config, 'hostperf-network', 'hostperf / Network',
              'vnetperf-style checks to each peer: UDP ping RTT, loss, clock offset, and rate-capped TCP and UDP '
              + 'throughput bursts.', ['hostperf', 'network'], [
    g.row('Latency'),
    g.heatmap('RTT heatmap', 'Histogram of every UDP ping round trip (responder time removed).',
              'sum by (le) (rate(hostperf_net_rtt_seconds_bucket{%s}[$__rate_interval]))' % SEL, 's'),
    g.timeseries('Median RTT per peer', 'vnetperf: at most 1000 us (red above), ideally 200 us or less (yellow '
                                        + 'above).',
                 [g.target('hostperf:net_rtt_seconds:p50_5m{%s}' % SEL, '{{instance}} → {{peer}}')], 's', RTT, min=0),
    g.table('Peer-to-peer RTT matrix', 'Median RTT over 5 minutes from each host (rows) to each peer it '
                                       + 'observes (columns).',
            [g.target('hostperf:net_rtt_seconds:p50_5m{%s}' % SEL, instant=true, format='table')], 's', RTT,
            cellType='color-background',
            extra=[{ id: 'groupingToMatrix', options: { columnField: 'peer', rowField: 'instance', valueField: 'Value' } }]),
    g.timeseries('p99 RTT per peer', '99th percentile of the ping round trips over 5 minutes.',
                 // From the buckets on demand: a recorded p99 of every link cost the rules as much as the
                 // median (docs/benchmarks.md, rule evaluation), and only this panel reads it.
                 [g.target('histogram_quantile(0.99, rate(hostperf_net_rtt_seconds_bucket{%s}[5m]))' % SEL,
                           '{{instance}} → {{peer}}')], 's', RTT, min=0),
    g.timeseries('Clock offset', 'Peer clock minus local clock (NTP formula, minimum-delay sample). vnetperf: '
                                 + 'under 1 s.',
                 [g.target('hostperf_net_clock_offset_seconds{%s}' % SEL, '{{instance}} → {{peer}}')], 's',
                 g.steps(c.red, [[-t.clockOffsetSeconds, c.green], [t.clockOffsetSeconds, c.red]])),
    g.timeseries('Ping loss', 'UDP pings without a reply over 10 minutes. Alert above 1 %.',
                 [g.target('hostperf:net_packet_loss_ratio:rate10m{%s}' % SEL, '{{instance}} → {{peer}}')],
                 'percentunit', g.steps(c.green, [[t.pingLossRatio, c.red]]), min=0),
    g.row('Throughput'),
    // Scheduled bursts are capped (probes.net.throughput_rate, 32 MB/s by
    // default), so the 100/800 MB/s thresholds would paint every host red:
    // the panels show the cap next to the bursts and judge the share of it.
    g.timeseries('TCP throughput per peer', 'Last rate-capped TCP burst and the burst cap '
                                            + '(probes.net.throughput_rate). The vnetperf figures (100 MB/s minimum, '
                                            + '800 ideal) are judged on full runs only.',
                 [g.target('hostperf_net_tcp_throughput_bytes_per_second{%s}' % SEL, '{{instance}} → {{peer}}'),
                  g.target('hostperf_net_throughput_rate_limit_bytes_per_second{%s}' % SEL, '{{instance}} burst cap', 'B')],
                 'binBps', min=0),
    g.timeseries('UDP throughput per peer', 'Last rate-capped UDP burst and the burst cap; UDP may be lower than TCP.',
                 [g.target('hostperf_net_udp_throughput_bytes_per_second{%s}' % SEL, '{{instance}} → {{peer}}'),
                  g.target('hostperf_net_throughput_rate_limit_bytes_per_second{%s}' % SEL, '{{instance}} burst cap', 'B')],
                 'binBps', min=0),
    g.timeseries('Bursts vs their cap', 'Burst throughput / the burst cap: 100 % is a link that carried the '
                                        + 'capped burst. Below 90 % yellow, below 50 % red.',
                 [g.target('hostperf_net_tcp_throughput_bytes_per_second{%s} / on(instance, job) group_left hostperf_net_throughput_rate_limit_bytes_per_second{%s}'
                           % [SEL, SEL], '{{instance}} → {{peer}} tcp'),
                  g.target('hostperf_net_udp_throughput_bytes_per_second{%s} / on(instance, job) group_left hostperf_net_throughput_rate_limit_bytes_per_second{%s}'
                           % [SEL, SEL], '{{instance}} → {{peer}} udp', 'B')],
                 'percentunit', g.steps(c.red, [[t.burstCapRatioMin, c.yellow], [t.burstCapRatioWarn, c.green]]), min=0),
    g.timeseries('UDP burst loss', 'Datagrams lost in the last UDP burst. Alert above 5 %.',
                 [g.target('hostperf_net_udp_loss_ratio{%s}' % SEL, '{{instance}} → {{peer}} loss')], 'percentunit',
                 g.steps(c.green, [[t.udpLossRatio, c.yellow]]), min=0),
    g.timeseries('UDP jitter', 'RFC 3550 interarrival jitter of the last UDP burst.',
                 [g.target('hostperf_net_udp_jitter_seconds{%s}' % SEL, '{{instance}} → {{peer}}')], 's', min=0),
    g.row('Peers and responder'),
    g.panel('state-timeline', 'Peer reachability', '1: the peer answered the last pings; 0: unreachable.',
            [g.target('hostperf_net_peer_up{%s}' % SEL, '{{instance}} → {{peer}}')], 'none', UP,
            options={ showValue: 'never', mergeValues: true, rowHeight: 0.9 }, mappings=upMap),
    g.timeseries('Responder requests and drops', 'Requests the local peer responder answered, and what it '
                                                 + 'dropped (bad HMAC, rate limited, busy...).',
                 [g.target('sum by (instance, type) (rate(hostperf_net_responder_requests_total{%s}[$__rate_interval]))'
                           % SEL, '{{instance}} {{type}}'),
                  g.target('sum by (instance, reason) (rate(hostperf_net_responder_dropped_total{%s}[$__rate_interval]))'
                           % SEL, '{{instance}} dropped {{reason}}', 'B')], 'reqps', min=0),
    g.stat('Responder up', '1 while this host\'s peer responder serves (other hosts\' pings and bursts need it).',
           [g.target('hostperf_net_responder_up{%s}' % SEL, '{{instance}}', instant=true)], 'none', UP, w=12, h=6,
           mappings=upMap),
    g.timeseries('Known, probed and observing peers', 'Peers configured (known), probed in the last run, and '
                                                      + 'observing this host (observers).',
                 [g.target('hostperf_net_peers{%s}' % SEL, '{{instance}} {{set}}')], 'none', min=0),
    g.timeseries('Last probe per peer', 'Time since each peer was last probed: a peer in this host\'s set is '
                                        + 'probed every cycle; one that leaves the set loses its series.',
                 [g.target('time() - hostperf_net_peer_last_probe_timestamp_seconds{%s}' % SEL, '{{instance}} → {{peer}}')],
                 's', min=0),
    g.timeseries('Throughput bytes sent', 'Bytes sent in scheduled throughput bursts (budget.net_bytes_per_hour).',
                 [g.target('sum by (instance) (rate(hostperf_net_throughput_bytes_total{%s}[$__rate_interval]))' % SEL,
                           '{{instance}}')], 'binBps', min=0),
    // Which interface serves each peer, and what moved on it (and
    // on its bond or team members) while this host's own bursts ran.
    g.row('Interfaces'),
    g.timeseries('Interface errors during probes', 'Per interface toward the peers (and per bond or team member): '
                                                   + 'error counters that grew while this host\'s own pings and '
                                                   + 'bursts ran, and the host\'s TCP retransmits during its TCP '
                                                   + 'bursts. Alert: HostperfNetInterfaceErrors.',
                 [g.target('sum by (instance, interface, counter) (increase(hostperf_net_interface_errors_during_probe_total{%s}[$__rate_interval]))'
                           % SEL, '{{instance}} {{interface}} {{counter}}'),
                  g.target('increase(hostperf_net_tcp_retransmits_during_probe_total{%s}[$__rate_interval])' % SEL,
                           '{{instance}} TCP retransmits', 'B')], 'none', min=0),
    g.timeseries('Interface speed', 'Link speed per interface toward the peers and per member (absent when the '
                                    + 'kernel does not know it: a down link, a virtual device). A member slower than '
                                    + 'the others is a bad negotiation.',
                 [g.target('hostperf_net_interface_speed_bytes_per_second{%s}' % SEL, '{{instance}} {{interface}}')],
                 'Bps', min=0),
    g.timeseries('Interface MTU', 'MTU per interface toward the peers and per member.',
                 [g.target('hostperf_net_interface_mtu_bytes{%s}' % SEL, '{{instance}} {{interface}}')], 'none', min=0),
    g.timeseries('MTU toward each peer, both ends', 'This end\'s MTU toward the peer (local) and the peer\'s toward '
                                                   + 'this host (remote, from its hello reply). Alert: '
                                                   + 'HostperfNetMtuMismatch.',
                 [g.target('hostperf_net_peer_mtu_bytes{%s}' % SEL, '{{instance}} → {{peer}} {{side}}'),
                  g.target('hostperf_net_peer_mtu_mismatch{%s}' % SEL, '{{instance}} → {{peer}} mismatch (1)', 'B')],
                 'none', min=0),
    g.table('Interface per peer', 'The interface the route to each peer uses.',
            [g.target('hostperf_net_peer_interface_info{%s}' % SEL, instant=true, format='table')], 'none',
            hide=['Time', 'Value', '__name__', 'job']),
  ])
