local p = import '../lib/promql.libsonnet';
// Network: per link (observer instance -> peer), then per target host across
// its observers. Each host is watched by a stable set of observers (K = 8), so
// every link's series is continuous; the host-level counts below are what the
// alerts judge, never one observer's view alone.
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local f = c.fleetLabel,
    local h = c.hostLabel,
    local r = c.rackLabel,
    local or_ = 'observer_' + c.rackLabel,
    // Host-level series carry the host's rack too (absent when unknown).
    local by = '%s, %s, %s' % [f, r, h],
    local obs = '%s, %s, %s' % [f, or_, c.observerLabel],
    local pair = '%s, %s, %s' % [f, r, or_],
    local link(expr) = p.withLinkIdentity(c, expr),
    // Links whose rack pair is degraded as a whole (HostperfNetRackPairDegraded)
    // are explained by the fabric between the racks: left out of the host-level
    // and observer-level counts and of the link alerts.
    local notPair(expr) = '(%s unless on(%s) (hostperf_rack_pair:net_degraded:bool == 1))' % [expr, pair],
    // (cluster, rack, observer_rack) keys with observer_rack = rack: the
    // diagonal, i.e. a rack's links to itself (PromQL cannot compare two
    // label values; this set can be joined against).
    local diagonal(expr) = 'label_replace(%s, "%s", "$1", "%s", "(.*)")' % [expr, or_, r],
    // The same series seen from the other end: rack and observer_rack swapped.
    local swapped(expr) = 'label_replace(label_replace(label_replace(%(e)s, "rack_", "$1", "%(r)s", "(.*)"), "%(r)s", "$1", "%(o)s", "(.*)"), "%(o)s", "$1", "rack_", "(.*)")' % { e: expr, r: r, o: or_ },
    local dropTmp(expr) = 'label_replace(%s, "rack_", "", "", "")' % expr,
    groups+: [{
      name: 'hostperf-net-recording',
      rules: [
        // --- host identity ----------------------------------------------------
        // One series per scrape target of exporterSelector: `host` is its
        // canonical name (instance minus port), net_name the name it has in the
        // peers_file (hostperf_net_self_info{peer}, port removed) or, when the
        // daemon reports none, the canonical host. The reported name is latched
        // while the target is down (this rule reads its own previous output,
        // one evaluation old: the evaluation interval must stay below the
        // lookback delta, 5m), so its observers' links keep resolving to it
        // during an outage; a target removed from the scrape config drops out.
        // topk by name: two targets claiming one name would make the link
        // re-labelling (a many-to-one join) fail as a whole; one of them wins.
        {
          record: 'hostperf:host_identity',
          expr: |||
            topk by (%(f)s, net_name) (1,
                group by (instance, job, %(f)s, %(r)s, %(h)s, net_name) (
                  %(selfName)s
                    and on(instance, job)
                  %(up)s
                )
              or on(instance, job)
                (hostperf:host_identity and on(instance, job) (%(up)s == 0))
              or on(instance, job)
                group by (instance, job, %(f)s, %(r)s, %(h)s, net_name) (
                  label_replace(%(upHost)s, "net_name", "$1", "%(h)s", "(.*)")
                )
            )
          ||| % {
            f: f, r: r, h: h, up: p.up(c),
            selfName: std.stripChars(p.indent(p.hostFrom(c, p.hostLabels(c, m('hostperf_net_self_info')), 'peer', 'net_name'), '      '), ' '),
            upHost: std.stripChars(p.indent(p.hostLabels(c, p.up(c)), '      '), ' '),
          },
        },
        // 1 per (fleet, name) that links point at and no identity knows, neither
        // as its peers_file name nor as its canonical host.
        {
          record: 'hostperf:net_unresolved_name',
          expr: |||
            group by (%(f)s, net_name) (
              %(links)s
            )
              unless on(%(f)s, net_name) hostperf:host_identity
              unless on(%(f)s, net_name) label_replace(hostperf:host_identity, "net_name", "$1", "%(h)s", "(.*)")
          ||| % { f: f, h: h, links: std.stripChars(p.indent(p.hostFrom(c, p.fleet(c, m('hostperf_net_peer_up')), 'peer', 'net_name'), '  '), ' ') },
        },
        // Link target name -> canonical host and rack, one per (fleet, name):
        // the peers_file names first, then canonical hosts used as names, then
        // unresolved names as themselves (p.linkLabels joins on it).
        {
          record: 'hostperf:net_target_identity',
          expr: |||
            topk by (%(f)s, net_name) (1,
                group by (%(f)s, net_name, %(h)s, %(r)s) (hostperf:host_identity)
              or on(%(f)s, net_name)
                group by (%(f)s, net_name, %(h)s, %(r)s) (label_replace(hostperf:host_identity, "net_name", "$1", "%(h)s", "(.*)"))
              or on(%(f)s, net_name)
                label_replace(hostperf:net_unresolved_name, "%(h)s", "$1", "net_name", "(.*)")
            )
          ||| % { f: f, h: h, r: r },
        },
        // --- per link: labels instance, job, peer, host (target), observer ----
        // One series per link (value 1) carrying the link's labels: host and
        // rack of the target through its identity, observer and
        // observer_rack, the filled fleet label. The per-link rules below join
        // it on (instance, job, peer); it follows the links the observers
        // report (hostperf_net_peer_up), so a link no longer observed leaves
        // the per-link series with it.
        {
          record: 'hostperf:net_link_identity',
          expr: p.linkLabels(c, 'group by (%s) (%s)' % [std.join(', ', p.linkIdentityKey(c)), m('hostperf_net_peer_up')]),
        },
        {
          record: 'hostperf:net_rtt_seconds:p50_5m',
          expr: link('histogram_quantile(0.5, rate(%s[%s]))' % [m('hostperf_net_rtt_seconds_bucket'), c.rateWindow]),
        },
        {
          record: 'hostperf:net_packet_loss_ratio:rate10m',
          expr: link(|||
            rate(%s[%s])
              / (rate(%s[%s]) > 0)
          ||| % [m('hostperf_net_packets_lost_total'), c.lossWindow, m('hostperf_net_packets_sent_total'), c.lossWindow]),
        },
        // 0/1 per link, present for every link in the observer's set.
        {
          record: 'hostperf:net_link_down',
          expr: link('%s == bool 0' % m('hostperf_net_peer_up')),
        },
        // NaN (no reply in the window) compares false: a down link is not "slow".
        {
          record: 'hostperf:net_link_rtt_high',
          expr: 'hostperf:net_rtt_seconds:p50_5m > bool %g' % c.rttMaxSeconds,
        },
        {
          record: 'hostperf:net_link_lossy',
          expr: 'hostperf:net_packet_loss_ratio:rate10m > bool %g' % c.lossRatio,
        },
        // The latest scheduled TCP burst of the link against the observer's cap
        // (bursts rotate over the observed set: last value within burstWindow).
        {
          record: 'hostperf:net_link_tcp_burst_cap_ratio',
          expr: link(|||
            last_over_time(%s[%s])
              / on(instance, job) group_left()
            (%s > 0)
          ||| % [m('hostperf_net_tcp_throughput_bytes_per_second'), c.burstWindow,
                 m('hostperf_net_throughput_rate_limit_bytes_per_second')]),
        },
        {
          record: 'hostperf:net_link_throughput_low',
          expr: 'hostperf:net_link_tcp_burst_cap_ratio < bool %g' % c.burstCapRatio,
        },
        {
          record: 'hostperf:net_link_clock_skewed',
          expr: link('abs(%s) > bool %g' % [m('hostperf_net_clock_offset_seconds'), c.clockSkewMaxSeconds]),
        },
        // --- rack pairs (cluster, observer_rack -> rack) ------------------------
        // A link is bad when it is down, slow or lossy.
        {
          record: 'hostperf:net_link_bad',
          expr: |||
            max without (signal) (
                label_replace(hostperf:net_link_down, "signal", "down", "", "")
              or
                label_replace(hostperf:net_link_rtt_high, "signal", "rtt", "", "")
              or
                label_replace(hostperf:net_link_lossy, "signal", "loss", "", "")
            )
          |||,
        },
        { record: 'hostperf_rack_pair:net_links:count', expr: 'count by (%s) (hostperf:net_link_bad)' % pair },
        { record: 'hostperf_rack_pair:net_links_bad:count', expr: 'sum by (%s) (hostperf:net_link_bad)' % pair },
        {
          record: 'hostperf_rack_pair:net_hosts_bad:count',
          expr: 'count by (%s) (group by (%s, %s) (hostperf:net_link_bad == 1))' % [pair, pair, h],
        },
        {
          record: 'hostperf_rack_pair:net_observers_bad:count',
          expr: 'count by (%s) (group by (%s, %s) (hostperf:net_link_bad == 1))' % [pair, pair, c.observerLabel],
        },
        // 1 while most links from the observer rack into the rack are bad (at
        // least minObservers links, and at least 2 distinct bad hosts at each
        // end: one bad host or observer is a host fault), else 0.
        {
          record: 'hostperf_rack_pair:net_bad:bool',
          expr: |||
            (
                hostperf_rack_pair:net_links:count >= %(n)d
              and
                2 * hostperf_rack_pair:net_links_bad:count > hostperf_rack_pair:net_links:count
              and
                hostperf_rack_pair:net_hosts_bad:count >= 2
              and
                hostperf_rack_pair:net_observers_bad:count >= 2
            ) * 0 + 1
            or
              hostperf_rack_pair:net_links:count * 0
          ||| % { n: c.minObservers },
        },
        // 1 while a pair of two different racks is bad in both directions and
        // neither rack's links to itself are mostly bad (then that rack, not
        // the fabric between the two, is the fault): the links between the two
        // racks are explained by the pair. Recorded for both orientations.
        {
          record: 'hostperf_rack_pair:net_degraded:bool',
          expr: |||
            (
              (hostperf_rack_pair:net_bad:bool == 1)
                and on(%(pair)s) %(sw)s
                unless on(%(pair)s) %(diag)s
                unless on(%(f)s, %(r)s) (hostperf_rack_pair:net_bad:bool == 1 and on(%(pair)s) %(diag)s)
                unless on(%(f)s, %(or)s) (hostperf_rack_pair:net_bad:bool == 1 and on(%(pair)s) %(diag)s)
            )
            or
              hostperf_rack_pair:net_bad:bool * 0
          ||| % {
            pair: pair,
            f: f,
            r: r,
            or: or_,
            sw: dropTmp(swapped('(hostperf_rack_pair:net_bad:bool == 1)')),
            diag: diagonal('group by (%s, %s) (hostperf_rack_pair:net_links:count)' % [f, r]),
          },
        },
        // The one orientation of one degraded pair per fleet that
        // HostperfNetRackPairDegraded names (both orientations qualify, and
        // PromQL cannot order two label values). The pick is latched: this
        // rule reads its own previous output and keeps it while that pair stays
        // degraded, so the alert's labels never flip; a new pick takes the
        // orientation with the most bad links (topk; a tie goes to the series
        // the storage returns first).
        {
          record: 'hostperf_rack_pair:net_alerted:bool',
          expr: |||
            (hostperf_rack_pair:net_alerted:bool and on(%(pair)s) (hostperf_rack_pair:net_degraded:bool == 1))
            or on(%(f)s)
            topk by (%(f)s) (1,
              hostperf_rack_pair:net_links_bad:count and on(%(pair)s) (hostperf_rack_pair:net_degraded:bool == 1)
            ) * 0 + 1
          ||| % { pair: pair, f: f },
        },
        // --- per target host, across its observers ---------------------------
        { record: 'hostperf_host:net_observers:count', expr: 'count by (%s) (%s)' % [by, notPair('hostperf:net_link_down')] },
        { record: 'hostperf_host:net_observers_down:count', expr: 'sum by (%s) (%s)' % [by, notPair('hostperf:net_link_down')] },
        { record: 'hostperf_host:net_observers_rtt_high:count', expr: 'sum by (%s) (%s)' % [by, notPair('hostperf:net_link_rtt_high')] },
        { record: 'hostperf_host:net_observers_lossy:count', expr: 'sum by (%s) (%s)' % [by, notPair('hostperf:net_link_lossy')] },
        { record: 'hostperf_host:net_observers_throughput_measured:count', expr: 'count by (%s) (hostperf:net_link_throughput_low)' % by },
        { record: 'hostperf_host:net_observers_throughput_low:count', expr: 'sum by (%s) (hostperf:net_link_throughput_low)' % by },
        { record: 'hostperf_host:net_observers_clock_measured:count', expr: 'count by (%s) (hostperf:net_link_clock_skewed)' % by },
        { record: 'hostperf_host:net_observers_clock_skewed:count', expr: 'sum by (%s) (hostperf:net_link_clock_skewed)' % by },
        // 1 while most observers (and at least minObservers) get no reply from
        // the host, else 0, recorded at every evaluation: its changes over
        // flapWindow tell flapping (HostperfNetHostUnreachable), its maximum
        // over flapWindow an outage whose loss must not page after recovery
        // (HostperfNetHostDegraded{signal="loss"}).
        {
          record: 'hostperf_host:net_unreachable:bool',
          expr: |||
            (%s) * 0 + 1
            or
              hostperf_host:net_observers:count * 0
          ||| % $._netCondition.unreachable,
        },
        // 1 while most observers' latest bursts to the host reach less than
        // half their cap (HostperfNetHostThroughputLow's condition), else 0. A
        // shaped or failing NIC also drops pings during the bursts: that loss
        // is the same fault, and its maximum over lossWindow keeps the loss
        // alerts quiet for as long as the loss window still holds it.
        {
          record: 'hostperf_host:net_throughput_low:bool',
          expr: |||
            (%s) * 0 + 1
            or
              hostperf_host:net_observers_throughput_measured:count * 0
          ||| % $._netCondition.majority('hostperf_host:net_observers_throughput_low:count', 'hostperf_host:net_observers_throughput_measured:count'),
        },
        // 1 while the host is unreachable, degraded or slow as a whole (the
        // host-level alerts' conditions), else 0: link alerts into or out of
        // it are implied.
        {
          record: 'hostperf_host:net_impaired:bool',
          expr: |||
            (
                (%(unreachable)s)
              or
                (%(rtt)s)
              or
                (%(loss)s)
              or
                (hostperf_host:net_throughput_low:bool == 1)
            ) * 0 + 1
            or
              hostperf_host:net_observers:count * 0
          ||| % {
            unreachable: $._netCondition.unreachable,
            rtt: $._netCondition.majority('hostperf_host:net_observers_rtt_high:count', 'hostperf_host:net_observers:count'),
            loss: $._netCondition.majority('hostperf_host:net_observers_lossy:count', 'hostperf_host:net_observers:count'),
          },
        },
        // --- per observer host, across the links it probes --------------------
        // Links into hosts that are impaired as a whole are explained by their
        // target and left out, and so are links of a degraded rack pair; an
        // observer most of whose other links are bad is the fault itself (its
        // NIC, CPU or path: Pingmesh's rule), so its links raise no link alerts
        // naming healthy targets.
        {
          record: 'hostperf_observer:net_links:count',
          expr: 'count by (%s) (%s unless on(%s, %s) (hostperf_host:net_impaired:bool == 1))' % [obs, notPair('hostperf:net_link_bad'), f, h],
        },
        {
          record: 'hostperf_observer:net_links_bad:count',
          expr: 'sum by (%s) (%s unless on(%s, %s) (hostperf_host:net_impaired:bool == 1))' % [obs, notPair('hostperf:net_link_bad'), f, h],
        },
        {
          record: 'hostperf_observer:net_impaired:bool',
          expr: |||
            (%(bad)s) * 0 + 1
            or
              hostperf_observer:net_links:count * 0
          ||| % { bad: $._netCondition.majority('hostperf_observer:net_links_bad:count', 'hostperf_observer:net_links:count') },
        },
      ],
    }, {
      // Attribution inside a host: MTUs of both ends per link, and
      // the interface counters that moved during the probe's own bursts.
      name: 'hostperf-net-interfaces-recording',
      rules: [
        // 0/1 per link (observer -> host); the MTUs of both ends toward each other.
        { record: 'hostperf:net_link_mtu_mismatch', expr: link(m('hostperf_net_peer_mtu_mismatch')) },
        { record: 'hostperf:net_link_mtu_local_bytes', expr: link('max without (side) (%s)' % m('hostperf_net_peer_mtu_bytes', 'side="local"')) },
        { record: 'hostperf:net_link_mtu_remote_bytes', expr: link('max without (side) (%s)' % m('hostperf_net_peer_mtu_bytes', 'side="remote"')) },
        { record: 'hostperf_host:net_observers_mtu_measured:count', expr: 'count by (%s) (hostperf:net_link_mtu_mismatch)' % by },
        { record: 'hostperf_host:net_observers_mtu_mismatch:count', expr: 'sum by (%s) (hostperf:net_link_mtu_mismatch)' % by },
        // 1 while most of a host's observers see another MTU than its own (the
        // host is the odd one out), else 0: its links' mismatches are implied.
        {
          record: 'hostperf_host:net_mtu_mismatch:bool',
          expr: |||
            (%s) * 0 + 1
            or
              hostperf_host:net_observers_mtu_measured:count * 0
          ||| % $._netCondition.majority('hostperf_host:net_observers_mtu_mismatch:count', 'hostperf_host:net_observers_mtu_measured:count'),
        },
        // Errors per interface (all counters) counted during this host's bursts.
        {
          record: 'hostperf_host:net_interface_errors_during_probe:increase%s' % c.interfaceErrorsWindow,
          expr: p.hostLabels(c, 'sum by (instance, job, interface) (increase(%s[%s]))' % [
            m('hostperf_net_interface_errors_during_probe_total', 'counter!~"%s"' % c.interfaceErrorsIgnored), c.interfaceErrorsWindow]),
        },
      ],
    }],
  },

  // Host-level conditions, shared by the recording rule above and the alerts.
  _netCondition:: {
    local c = $._config,
    // At least minObservers observers and at least half of them.
    unreachable:
      'hostperf_host:net_observers_down:count >= %(n)d and 2 * hostperf_host:net_observers_down:count >= hostperf_host:net_observers:count' % { n: c.minObservers },
    // At least minObservers of them and more than half.
    majority(count, of): '%(count)s >= %(n)d and 2 * %(count)s > %(of)s' % { count: count, of: of, n: c.minObservers },
  },
}
