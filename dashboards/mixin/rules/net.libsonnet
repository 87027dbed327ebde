local p = import '../lib/promql.libsonnet';
// Network: per link (observer instance -> peer), then per target host across
// its observers. Each host is watched by a stable set of observers (K = 8), so
// every link's series is continuous; the host-level counts below are what the
// alerts judge, never one observer's view alone.
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local by = p.hostBy(c),
    local obs = '%s, %s' % [c.fleetLabel, c.observerLabel],
    local link(expr) = p.linkLabels(c, expr),
    groups+: [{
      name: 'hostperf-net-recording',
      rules: [
        // --- per link: labels instance, job, peer, host (target), observer ----
        {
          record: 'hostperf:net_rtt_seconds:p50_5m',
          expr: link('histogram_quantile(0.5, rate(%s[%s]))' % [m('hostperf_net_rtt_seconds_bucket'), c.rateWindow]),
        },
        {
          record: 'hostperf:net_rtt_seconds:p99_5m',
          expr: link('histogram_quantile(0.99, rate(%s[%s]))' % [m('hostperf_net_rtt_seconds_bucket'), c.rateWindow]),
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
        // --- per target host, across its observers ---------------------------
        { record: 'hostperf_host:net_observers:count', expr: 'count by (%s) (hostperf:net_link_down)' % by },
        { record: 'hostperf_host:net_observers_down:count', expr: 'sum by (%s) (hostperf:net_link_down)' % by },
        { record: 'hostperf_host:net_observers_rtt_high:count', expr: 'sum by (%s) (hostperf:net_link_rtt_high)' % by },
        { record: 'hostperf_host:net_observers_lossy:count', expr: 'sum by (%s) (hostperf:net_link_lossy)' % by },
        { record: 'hostperf_host:net_observers_throughput_measured:count', expr: 'count by (%s) (hostperf:net_link_throughput_low)' % by },
        { record: 'hostperf_host:net_observers_throughput_low:count', expr: 'sum by (%s) (hostperf:net_link_throughput_low)' % by },
        { record: 'hostperf_host:net_observers_clock_measured:count', expr: 'count by (%s) (hostperf:net_link_clock_skewed)' % by },
        { record: 'hostperf_host:net_observers_clock_skewed:count', expr: 'sum by (%s) (hostperf:net_link_clock_skewed)' % by },
        // 1 while the host is unreachable or degraded as a whole (the host-level
        // alerts' conditions), else 0: link alerts into or out of it are implied.
        {
          record: 'hostperf_host:net_impaired:bool',
          expr: |||
            (
                (%(unreachable)s)
              or
                (%(rtt)s)
              or
                (%(loss)s)
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
        // A link is bad when it is down, slow or lossy. Links into hosts that are
        // impaired as a whole are explained by their target and left out; an
        // observer most of whose other links are bad is the fault itself (its
        // NIC, CPU or path: Pingmesh's rule), so its links raise no link alerts
        // naming healthy targets.
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
        {
          record: 'hostperf_observer:net_links:count',
          expr: 'count by (%s) (hostperf:net_link_bad unless on(%s) (hostperf_host:net_impaired:bool == 1))' % [obs, by],
        },
        {
          record: 'hostperf_observer:net_links_bad:count',
          expr: 'sum by (%s) (hostperf:net_link_bad unless on(%s) (hostperf_host:net_impaired:bool == 1))' % [obs, by],
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
      // Attribution inside a host (issue 22): MTUs of both ends per link, and
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
