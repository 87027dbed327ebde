local p = import '../lib/promql.libsonnet';
// Network alerts that localise: host-level when most of a host's observers
// (and at least minObservers) agree, link-level (info) when a problem is seen
// on one link only, naming both ends.
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    local cond = $._netCondition,
    local f = c.fleetLabel,
    local h = c.hostLabel,
    local o = c.observerLabel,
    local mib(b) = b / 1048576,
    local hostIn = '{{ $labels.%s }} (%s {{ $labels.%s }})' % [h, f, f],
    local unreachable = cond.unreachable,
    // A link alert only where neither end is impaired as a whole, and the
    // observer does not see most of its links bad (then it is the fault).
    local linkOnly(expr) = |||
      (
        %(e)s
      )
        unless on(%(f)s, %(h)s) (hostperf_host:net_impaired:bool == 1)
        unless on(%(f)s, %(o)s) label_replace(hostperf_host:net_impaired:bool == 1, "%(o)s", "$1", "%(h)s", "(.*)")
        unless on(%(f)s, %(o)s) (hostperf_observer:net_impaired:bool == 1)
    ||| % { e: std.stripChars(expr, '\n'), f: f, h: h, o: o },
    local linkDescription(what) =
      'The observer {{ $labels.%s }} ({{ $labels.instance }}) %s {{ $labels.%s }} ({{ $labels.peer }}), for %s, while the other observers of {{ $labels.%s }} do not: a fault on this link (path, port, firewall) rather than at either host.' % [o, what, h, p.words(c.forMedium), h],
    groups+: [{
      name: 'hostperf-net',
      rules: [
        a('HostperfNetHostUnreachable', unreachable,
          'warning', 'Host %s unreachable from its observers' % hostIn,
          '{{ $value }} of the hostperf peers that observe {{ $labels.%s }} (%s {{ $labels.%s }}) get no reply to their UDP pings, at least half of them, for %s: the host is down, its hostperf responder is not running, or its network is cut.' % [h, f, f, p.words(c.forShort)],
          c.forShort),
        a('HostperfNetHostDegraded',
          |||
            (%s)
              unless on(%s, %s)
            (%s)
          ||| % [(cond.majority('hostperf_host:net_observers_rtt_high:count', 'hostperf_host:net_observers:count')), f, h, unreachable],
          'warning', 'Network RTT to %s above %g us' % [hostIn, c.rttMaxSeconds * 1e6],
          '{{ $value }} of the observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, see a median round-trip time above vnetperf\'s maximum of %g us, for %s.' % [h, f, f, c.rttMaxSeconds * 1e6, p.words(c.forShort)],
          c.forShort, { signal: 'rtt' }),
        a('HostperfNetHostDegraded',
          |||
            (%s)
              unless on(%s, %s)
            (%s)
          ||| % [(cond.majority('hostperf_host:net_observers_lossy:count', 'hostperf_host:net_observers:count')), f, h, unreachable],
          'warning', 'Packet loss to %s' % hostIn,
          '{{ $value }} of the observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, lose more than %g %% of their UDP pings to it over %s, for %s.' % [h, f, f, c.lossRatio * 100, p.words(c.lossWindow), p.words(c.forShort)],
          c.forShort, { signal: 'loss' }),
        // Bursts are capped (probes.net.throughput_rate): a burst below half its
        // cap from most observers means the host's network cannot take even that.
        a('HostperfNetHostThroughputLow',
          |||
            (%s)
              unless on(%s, %s)
            (%s)
          ||| % [(cond.majority('hostperf_host:net_observers_throughput_low:count', 'hostperf_host:net_observers_throughput_measured:count')), f, h, unreachable],
          'warning', 'Scheduled bursts to %s reach less than half their cap' % hostIn,
          'The latest scheduled TCP burst of {{ $value }} observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of those that measured it in the last %s, reached less than %g %% of the observer\'s burst cap, for %s: a rate-limited or faulty NIC, port or path at this host.' % [h, f, f, p.words(c.burstWindow), c.burstCapRatio * 100, p.words(c.forLong)],
          c.forLong),
        a('HostperfNetClockSkew',
          cond.majority('hostperf_host:net_observers_clock_skewed:count', 'hostperf_host:net_observers_clock_measured:count'),
          'warning', 'Clock of %s off by more than %g s' % [hostIn, c.clockSkewMaxSeconds],
          '{{ $value }} of the observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, see its clock off from theirs by more than the %g s vnetperf allows, for %s.' % [h, f, f, c.clockSkewMaxSeconds, p.words(c.forShort)],
          c.forShort),
        a('HostperfNetLinkDegraded', linkOnly('hostperf:net_link_down == 1'),
          'info', 'Link {{ $labels.%s }} -> {{ $labels.%s }} down' % [o, h],
          linkDescription('gets no reply to its UDP pings from'),
          c.forMedium, { signal: 'down' }),
        a('HostperfNetLinkDegraded',
          linkOnly('hostperf:net_rtt_seconds:p50_5m > %g' % c.rttMaxSeconds),
          'info', 'Link {{ $labels.%s }} -> {{ $labels.%s }} RTT above %g us' % [o, h, c.rttMaxSeconds * 1e6],
          linkDescription('sees a median RTT of {{ $value | humanizeDuration }}, above %g us, to' % (c.rttMaxSeconds * 1e6)),
          c.forMedium, { signal: 'rtt' }),
        a('HostperfNetLinkDegraded',
          linkOnly(|||
            hostperf:net_packet_loss_ratio:rate10m > %g
              unless on(instance, job, peer) (hostperf:net_link_down == 1)
          ||| % c.lossRatio),
          'info', 'Link {{ $labels.%s }} -> {{ $labels.%s }} loses packets' % [o, h],
          linkDescription('loses {{ $value | humanizePercentage }} of its UDP pings to'),
          c.forMedium, { signal: 'loss' }),
        // vnetperf: at least 100 MB/s, ideally 800 MB/s or more, judged on full
        // runs only (hostperf_full_run_figure): scheduled bursts are capped.
        a('HostperfNetTcpThroughputBelowMinimum',
          p.hostLabels(c, '%s < %d' % [m('hostperf_full_run_figure', 'probe="net", figure="tcp_throughput_bytes_per_second"'), c.tcpMinBytes]),
          'warning', 'TCP throughput from {{ $labels.instance }} to {{ $labels.subject }} below %g MB/s' % mib(c.tcpMinBytes),
          'The last full network run of {{ $labels.instance }} (job {{ $labels.job }}) reached {{ $value | humanize1024 }}B/s of TCP throughput to {{ $labels.subject }} (best rate of the ladder), below vnetperf\'s minimum of %g MB/s.' % mib(c.tcpMinBytes),
          c.forMedium),
        a('HostperfNetTcpThroughputBelowIdeal',
          p.hostLabels(c, '(%s < %d) >= %d' % [m('hostperf_full_run_figure', 'probe="net", figure="tcp_throughput_bytes_per_second"'), c.tcpIdealBytes, c.tcpMinBytes]),
          'info', 'TCP throughput from {{ $labels.instance }} to {{ $labels.subject }} below %g MB/s' % mib(c.tcpIdealBytes),
          'The last full network run of {{ $labels.instance }} (job {{ $labels.job }}) reached {{ $value | humanize1024 }}B/s of TCP throughput to {{ $labels.subject }}: above vnetperf\'s minimum but below the ideal %g MB/s.' % mib(c.tcpIdealBytes),
          c.forMedium),
      ],
    }, {
      // Attribution inside a host (issue 22). A mismatch is seen from both
      // ends (each observes the other, or only one does): the pair is named
      // once, from the end with the larger MTU, or from the only end that
      // sees it; a host most of whose observers see a mismatch is named alone
      // and its links are left out.
      name: 'hostperf-net-interfaces',
      local mismatched = '(hostperf:net_link_mtu_local_bytes and on(%(f)s, %(h)s, %(o)s) (hostperf:net_link_mtu_mismatch == 1))' % { f: f, h: h, o: o },
      // The reverse link: observer and host swapped.
      local reversed(expr) = 'label_replace(label_replace(label_replace(%(e)s, "%(h)s_", "$1", "%(h)s", "(.*)"), "%(h)s", "$1", "%(o)s", "(.*)"), "%(o)s", "$1", "%(h)s_", "(.*)")' % { e: expr, h: h, o: o },
      rules: [
        a('HostperfNetMtuMismatch',
          cond.majority('hostperf_host:net_observers_mtu_mismatch:count', 'hostperf_host:net_observers_mtu_measured:count'),
          'warning', 'MTU of %s differs from its peers\'' % hostIn,
          '{{ $value }} of the hostperf peers that observe {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, use another MTU toward it than it uses toward them (hello replies), for %s: this host\'s interface MTU is the odd one out (hostperf_net_peer_mtu_bytes names both sides).' % [h, f, f, p.words(c.forMedium)],
          c.forMedium, { scope: 'host' }),
        a('HostperfNetMtuMismatch',
          |||
            (
                %(mm)s
                  > hostperf:net_link_mtu_remote_bytes
              or
                %(mm)s
                  unless on(%(f)s, %(h)s, %(o)s) %(rev)s
            )
              unless on(%(f)s, %(h)s) (hostperf_host:net_mtu_mismatch:bool == 1)
              unless on(%(f)s, %(o)s) label_replace(hostperf_host:net_mtu_mismatch:bool == 1, "%(o)s", "$1", "%(h)s", "(.*)")
          ||| % { mm: mismatched, f: f, h: h, o: o, rev: reversed('(hostperf:net_link_mtu_mismatch == 1)') },
          'warning', 'MTU mismatch between {{ $labels.%s }} and {{ $labels.%s }}' % [o, h],
          '{{ $labels.%s }} ({{ $labels.instance }}) uses an MTU of {{ $value }} bytes toward {{ $labels.%s }} ({{ $labels.peer }}), which answers with another (hostperf_net_peer_mtu_bytes{side="remote"}), for %s: large frames are dropped or fragmented on this link. Check both ends\' interfaces and the switch ports between them.' % [o, h, p.words(c.forMedium)],
          c.forMedium, { scope: 'link' }),
        a('HostperfNetInterfaceErrors',
          'hostperf_host:net_interface_errors_during_probe:increase%s > 0' % c.interfaceErrorsWindow,
          'warning', 'Interface {{ $labels.interface }} of %s counts errors during network probes' % hostIn,
          'The error counters of {{ $labels.interface }} on {{ $labels.%s }} ({{ $labels.instance }}) grew by {{ $value }} while hostperf\'s own pings and bursts ran, over the last %s (hostperf_net_interface_errors_during_probe_total by counter; %s left out): a cable, optic, NIC or switch port on this host\'s path.' % [h, p.words(c.interfaceErrorsWindow), c.interfaceErrorsIgnored]),
      ],
    }],
  },
}
