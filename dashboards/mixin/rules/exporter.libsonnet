local p = import '../lib/promql.libsonnet';
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    groups+: [{
      name: 'hostperf-exporter-recording',
      rules: [
        // Seconds since each probe last succeeded; a probe that never succeeded
        // counts from the daemon's start (its timestamp is 0 until then).
        {
          record: 'hostperf:probe_seconds_since_success',
          expr: $._probeSecondsSinceSuccess,
        },
      ],
    }],
  },
  _probeSecondsSinceSuccess:: |||
    time() - (
        %(ts)s > 0
      or
        %(ts)s
          + on(instance, job) group_left() %(start)s
    )
  ||| % {
    ts: p.metric($._config, 'hostperf_probe_last_success_timestamp_seconds'),
    start: p.metric($._config, 'process_start_time_seconds'),
  },
}
