local p = import '../lib/promql.libsonnet';
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    groups+: [{
      name: 'hostperf-exporter',
      rules: [
        // The expression of hostperf:probe_seconds_since_success, inline: an alert on a
        // recording rule of another group may see its value one evaluation late.
        // group_left(): a one-to-one match on(...) keeps only the matched labels,
        // and the alert lost the target's cluster and rack (its cluster became the
        // job's, so the inhibition by HostperfExporterDown never matched it).
        a('HostperfProbeStale',
          p.hostLabels(c, |||
            %s
            > on(instance, job, probe) group_left() %d * %s
          ||| % [std.stripChars($._probeSecondsSinceSuccess, '\n'), c.probeStaleIntervals, m('hostperf_probe_interval_seconds')]),
          'warning', 'Probe {{ $labels.probe }} has not succeeded for %d intervals on {{ $labels.instance }}' % c.probeStaleIntervals,
          'The {{ $labels.probe }} probe on {{ $labels.instance }} (job {{ $labels.job }}) last succeeded {{ $value | humanizeDuration }} ago, more than %d of its intervals: it fails, is skipped (budget, free space, no peers) or times out.' % c.probeStaleIntervals),
        // Any target of exporterSelector that is down, for as long as it is
        // down: from `up` alone, so that neither a long outage (a series that
        // ages out) nor a target that never served silences it. It carries the
        // canonical host label (the target's host, as the network alerts do
        // through hostperf:host_identity), so that Alertmanager can inhibit the
        // host's other alerts (dashboards/alertmanager/hostperf-alertmanager.yml).
        // A crash-looping daemon (or a flapping path to it) is down a share of
        // its scrapes and never for `for:` in a row: it fires too, and holds
        // while the flapping lasts (the window's share, not the latest scrape).
        // One restart (2 changes) or a lost scrape now and then is neither.
        a('HostperfExporterDown',
          p.hostLabels(c, |||
            %(up)s == 0
              or
            (
              changes(%(up)s[%(w)s]) >= 4
                and
              avg_over_time(%(up)s[%(w)s]) < %(r)g
            )
          ||| % { up: p.up(c), w: c.flapWindow, r: c.exporterFlapUpRatio }),
          'critical', 'hostperf_exporter down on {{ $labels.instance }}',
          'Prometheus cannot scrape hostperf_exporter on {{ $labels.instance }} (job {{ $labels.job }}): down for %s, or down and up again repeatedly with more than %g %% of its scrapes failing over %s (a crash loop or a flapping path). No performance data comes from this host.' % [p.words(c.forExporterDown), (1 - c.exporterFlapUpRatio) * 100, p.words(c.flapWindow)],
          c.forExporterDown),
        // Scheduled runs skipped (the CPU budget spent, the host
        // busy, no room) for longer than the interval; the exporter then
        // reports the schedule suspended and success 0. Skips for an
        // operator's full run are expected and do not count.
        a('HostperfProbeScheduleSuspended',
          p.hostLabels(c, |||
            %s == 1
            and on(instance, job, probe) increase(%s[15m]) > 0
          ||| % [m('hostperf_probe_schedule_suspended'), m('hostperf_probe_skipped_total', 'reason!="full_run_active"')]),
          'warning', 'Scheduled {{ $labels.probe }} runs are suspended on {{ $labels.instance }}',
          'The {{ $labels.probe }} probe on {{ $labels.instance }} (job {{ $labels.job }}) has had its scheduled runs skipped for longer than its interval (hostperf_probe_skipped_total by reason: budget_exhausted, host_busy, no_space, ...): nothing is being measured there.',
          '10m'),
        a('HostperfConfigReloadFailed',
          p.hostLabels(c, '%s == 0' % m('hostperf_config_last_reload_successful')),
          'warning', 'hostperf config reload failed on {{ $labels.instance }}',
          'The last config load of hostperf_exporter on {{ $labels.instance }} (job {{ $labels.job }}) failed; it keeps running with the previous config.',
          c.forShort),
      ],
    }],
  },
}
