local p = import '../lib/promql.libsonnet';
// Network alerts that localise: host-level when most of a host's observers
// (and at least minObservers) agree, link-level (info) when a problem is seen
// on one link only, naming both ends.
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={}, keepFiringFor=null)
      p.alert(c, name, expr, severity, summary, description, forDur, labels, keepFiringFor),
    local cond = $._netCondition,
    local f = c.fleetLabel,
    local h = c.hostLabel,
    local o = c.observerLabel,
    local mib(b) = b / 1048576,
    local hostIn = '{{ $labels.%s }} (%s {{ $labels.%s }})' % [h, f, f],
    local r = c.rackLabel,
    local or_ = 'observer_' + c.rackLabel,
    local pr = 'peer_' + c.rackLabel,
    local unreachable = cond.unreachable,
    local upSel = p.up(c),
    // The target's exporter was down at some scrape within the window: a dead
    // host or a reboot, paged by HostperfExporterDown alone.
    local exporterWasDown(window) = p.hostLabels(c, 'min_over_time(%s[%s]) == 0' % [upSel, window]),
    // The target's exporter started within lossWindow: its responder was
    // silent for the restart, and those lost pings are no fault.
    local started = p.hostLabels(c, 'time() - process_start_time_seconds%s < %d' % [
      if c.exporterSelector == '' then '' else '{%s}' % c.exporterSelector, p.seconds(c.lossWindow)]),
    // Quote the reference tool only where the threshold is its default.
    local ref(value, default, tool, what) =
      if value == default then "%s's %s" % [tool, what] else 'the configured %s' % what,
    // A link alert only where neither end is impaired as a whole, the
    // observer does not see most of its links bad (then it is the fault) and
    // the link's rack pair is not degraded as a whole, at any evaluation of
    // the last lossWindow (a link's loss outlives the host-level fault that
    // explains it: without the window the link alerts held back during the
    // fault would page after it), and the target's exporter neither restarted
    // nor was down in it. The observer's rack is
    // named peer_<rack> on alerts (the other end's rack), as on
    // HostperfNetRackPairDegraded, so that Alertmanager can match them.
    local linkOnly(expr) = |||
      label_replace(label_replace(
        (
          %(e)s
        )
          unless on(%(f)s, %(h)s) (max_over_time(hostperf_host:net_impaired:bool[%(w)s]) == 1)
          unless on(%(f)s, %(o)s) label_replace(max_over_time(hostperf_host:net_impaired:bool[%(w)s]) == 1, "%(o)s", "$1", "%(h)s", "(.*)")
          unless on(%(f)s, %(o)s) (max_over_time(hostperf_observer:net_impaired:bool[%(w)s]) == 1)
          unless on(%(f)s, %(r)s, %(or)s) (max_over_time(hostperf_rack_pair:net_degraded:bool[%(w)s]) == 1)
          unless on(%(f)s, %(h)s) %(started)s
          unless on(%(f)s, %(h)s) %(down)s,
      "%(pr)s", "$1", "%(or)s", "(.*)"), "%(or)s", "", "", "")
    ||| % { e: std.stripChars(expr, '\n'), f: f, h: h, o: o, r: r, or: or_, pr: pr, w: c.lossWindow,
            started: std.stripChars(started, '\n'), down: std.stripChars(exporterWasDown(c.lossWindow), '\n') },
    local linkDescription(what) =
      'The observer {{ $labels.%s }} ({{ $labels.instance }}) %s {{ $labels.%s }} ({{ $labels.peer }}), for %s, while the other observers of {{ $labels.%s }} do not: a fault on this link (path, port, firewall) rather than at either host.' % [o, what, h, p.words(c.forMedium), h],
    groups+: [{
      name: 'hostperf-net',
      rules: [
        // Unreachable now, or flapping: most observers lose pings over
        // lossWindow while the host went unreachable at least twice in
        // flapWindow (3 changes of hostperf_host:net_unreachable:bool; one
        // restart's blip is 2). keep_firing_for lossWindow holds the alert
        // through the reachable phases of slow flapping (one alert per
        // episode); it resolves once, lossWindow after the loss window is
        // clean. Fast flapping (seconds) shows as loss plus peer_up changing
        // from run to run, slow flapping (minutes) as whole phases: both
        // satisfy one of the two branches at every evaluation. Silent while
        // the host's own exporter is or was down within the hold window:
        // HostperfExporterDown explains it, also at recovery (no escape while
        // Alertmanager's inhibition clears). The flapping branch comes first,
        // so that $value stays the number of lossy observers while it holds.
        a('HostperfNetHostUnreachable',
          |||
            (
                (
                  %(lossy)s
                )
                  and on(%(f)s, %(h)s)
                changes(hostperf_host:net_unreachable:bool[%(flap)s]) >= 3
              or on(%(f)s, %(h)s)
                %(now)s
            )
              unless on(%(f)s, %(h)s)
            %(down)s
          ||| % {
            now: unreachable, f: f, h: h, flap: c.flapWindow,
            lossy: cond.majority('hostperf_host:net_observers_lossy:count', 'hostperf_host:net_observers:count'),
            down: exporterWasDown(c.lossWindow),
          },
          'warning', 'Host %s unreachable from its observers' % hostIn,
          '{{ $value }} of the hostperf peers that observe {{ $labels.%s }} (%s {{ $labels.%s }}), at least half of them, get no reply to their UDP pings, or lose more than %g %% of them over %s while the host keeps going unreachable (flapping: unreachable at least twice in %s), for %s: the host is down or flapping, its hostperf responder is not running, or its network is cut. The alert holds for %s after the last sign of it.' % [h, f, f, c.lossRatio * 100, p.words(c.lossWindow), p.words(c.flapWindow), p.words(c.forShort), p.words(c.lossWindow)],
          c.forShort, keepFiringFor=c.lossWindow),
        a('HostperfNetHostDegraded',
          |||
            (%s)
              unless on(%s, %s)
            (%s)
          ||| % [(cond.majority('hostperf_host:net_observers_rtt_high:count', 'hostperf_host:net_observers:count')), f, h, unreachable],
          'warning', 'Network RTT to %s above %g us' % [hostIn, c.rttMaxSeconds * 1e6],
          '{{ $value }} of the observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, see a median round-trip time above %s of %g us, for %s.' % [h, f, f, ref(c.rttMaxSeconds, 1e-3, 'vnetperf', 'maximum'), c.rttMaxSeconds * 1e6, p.words(c.forShort)],
          c.forShort, { signal: 'rtt' }),
        // Loss counted while the host was unreachable is the outage's, not a
        // degradation: silent while it was unreachable at any evaluation in
        // flapWindow (>= lossWindow, so the outage has left the loss window;
        // flapping is HostperfNetHostUnreachable's), within lossWindow of its
        // exporter's (re)start (process_start_time_seconds: the responder was
        // down for the restart) and within lossWindow of a failed scrape of
        // it (a reboot: HostperfExporterDown's), and while most observers'
        // bursts to it were below half their cap at any evaluation of the last
        // lossWindow (a rate-limited NIC drops pings during the bursts: one
        // fault, HostperfNetHostThroughputLow's, also after it clears). Held
        // for lossWindow after its condition clears, so that loss hovering at
        // the threshold is one alert, not one per crossing.
        a('HostperfNetHostDegraded',
          |||
            (%(lossy)s)
              unless on(%(f)s, %(h)s)
            (max_over_time(hostperf_host:net_unreachable:bool[%(flap)s]) == 1)
              unless on(%(f)s, %(h)s)
            %(started)s
              unless on(%(f)s, %(h)s)
            %(down)s
              unless on(%(f)s, %(h)s)
            (max_over_time(hostperf_host:net_throughput_low:bool[%(w)s]) == 1)
          ||| % {
            lossy: cond.majority('hostperf_host:net_observers_lossy:count', 'hostperf_host:net_observers:count'),
            f: f, h: h, flap: c.flapWindow,
            started: started,
            down: exporterWasDown(c.lossWindow),
            w: c.lossWindow,
          },
          'warning', 'Packet loss to %s' % hostIn,
          '{{ $value }} of the observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, lose more than %g %% of their UDP pings to it over %s, for %s, while it answers them (not unreachable in the last %s, no restart of its exporter in the last %s).' % [h, f, f, c.lossRatio * 100, p.words(c.lossWindow), p.words(c.forShort), p.words(c.flapWindow), p.words(c.lossWindow)],
          c.forShort, { signal: 'loss' }, c.lossWindow),
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
          '{{ $value }} of the observers of {{ $labels.%s }} (%s {{ $labels.%s }}), most of them, see its clock off from theirs by more than %s, for %s.' % [h, f, f, if c.clockSkewMaxSeconds == 1 then 'the %g s vnetperf allows' % c.clockSkewMaxSeconds else 'the configured %g s' % c.clockSkewMaxSeconds, p.words(c.forShort)],
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
        // Rack pairs: one alert per fleet, naming the pair orientation that
        // hostperf_rack_pair:net_alerted:bool picked and holds (stable labels,
        // so `for` holds); the description lists every degraded pair of the
        // fleet (a second broken uplink is named in the same alert, not paged
        // again).
        a('HostperfNetRackPairDegraded',
          |||
            label_replace(label_replace(
              hostperf_rack_pair:net_alerted:bool == 1,
            "%(pr)s", "$1", "%(or)s", "(.*)"), "%(or)s", "", "", "")
          ||| % { pr: pr, or: or_ },
          'warning', 'Network between racks {{ $labels.%s }} and {{ $labels.%s }} (%s {{ $labels.%s }}) degraded' % [r, pr, f, f],
          'Most links between rack {{ $labels.%(r)s }} and rack {{ $labels.%(pr)s }} of %(f)s {{ $labels.%(f)s }} are down, slow (median RTT above %(rtt)g us) or lossy (more than %(loss)g %%), in both directions, from at least 2 hosts to at least 2 hosts, for %(for)s, while each rack\'s links to itself are fine: the fabric between the two racks (uplinks, spine, a shaped or failing port). The host and link alerts these links would raise are left out. Degraded pairs in %(f)s {{ $labels.%(f)s }} (observer rack -> rack): {{ range printf "hostperf_rack_pair:net_degraded:bool{%(f)s=\\"%%s\\"} == 1" $labels.%(f)s | query | sortByLabel "%(or)s" }}{{ .Labels.%(or)s }} -> {{ .Labels.%(r)s }}; {{ end }}' % {
            r: r, pr: pr, f: f, or: or_, rtt: c.rttMaxSeconds * 1e6, loss: c.lossRatio * 100, 'for': p.words(c.forShort),
          },
          c.forShort),
        // One alert per fleet: link targets whose peers_file name matches no
        // scrape target (neither the name a daemon reports for itself nor a
        // canonical host). Their network alerts name the peers_file entry, which
        // HostperfExporterDown's inhibition cannot match.
        a('HostperfHostIdentityUnresolved',
          'count by (%s) (hostperf:net_unresolved_name)' % f,
          'warning', '{{ $value }} peers_file names of %s {{ $labels.%s }} match no scrape target' % [f, f],
          '{{ $value }} hosts that the hostperf peers of %(f)s {{ $labels.%(f)s }} probe are named in the peers_file by a name that matches no scrape target of %(sel)s, neither as the name a daemon reports for itself (hostperf_net_self_info) nor as a target\'s host, for %(for)s: their network alerts name the peers_file entry, and a dead host may page twice. Names: {{ range printf "hostperf:net_unresolved_name{%(f)s=\\"%%s\\"}" $labels.%(f)s | query | sortByLabel "net_name" }}{{ .Labels.net_name }} {{ end }}' % {
            f: f, sel: if c.exporterSelector == '' then 'every job' else '{%s}' % c.exporterSelector, 'for': p.words(c.forMedium),
          },
          c.forMedium),
        // vnetperf: at least 100 MB/s, ideally 800 MB/s or more, judged on full
        // runs only (hostperf_full_run_figure): scheduled bursts are capped.
        a('HostperfNetTcpThroughputBelowMinimum',
          p.hostLabels(c, '%s < %d' % [m('hostperf_full_run_figure', 'probe="net", figure="tcp_throughput_bytes_per_second"'), c.tcpMinBytes]),
          'warning', 'TCP throughput from {{ $labels.instance }} to {{ $labels.subject }} below %g MiB/s' % mib(c.tcpMinBytes),
          'The last full network run of {{ $labels.instance }} (job {{ $labels.job }}) reached {{ $value | humanize1024 }}B/s of TCP throughput to {{ $labels.subject }} (best rate of the ladder), below %s of %g MiB/s.' % [ref(c.tcpMinBytes, 100 * 1048576, 'vnetperf', 'minimum'), mib(c.tcpMinBytes)],
          c.forMedium),
        a('HostperfNetTcpThroughputBelowIdeal',
          p.hostLabels(c, '(%s < %d) >= %d' % [m('hostperf_full_run_figure', 'probe="net", figure="tcp_throughput_bytes_per_second"'), c.tcpIdealBytes, c.tcpMinBytes]),
          'info', 'TCP throughput from {{ $labels.instance }} to {{ $labels.subject }} below %g MiB/s' % mib(c.tcpIdealBytes),
          'The last full network run of {{ $labels.instance }} (job {{ $labels.job }}) reached {{ $value | humanize1024 }}B/s of TCP throughput to {{ $labels.subject }}: above the minimum of %g MiB/s but below %s of %g MiB/s.' % [mib(c.tcpMinBytes), ref(c.tcpIdealBytes, 800 * 1048576, 'vnetperf', 'ideal'), mib(c.tcpIdealBytes)],
          c.forMedium),
      ],
    }, {
      // Attribution inside a host. A mismatch is seen from both
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
