local p = import '../lib/promql.libsonnet';
{
  prometheusAlerts+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    local a = function(name, expr, severity, summary, description, forDur=null, labels={})
      p.alert(c, name, expr, severity, summary, description, forDur, labels),
    groups+: [{
      name: 'hostperf-memory',
      rules: [
        a('HostperfMemoryBandwidthBelowBaseline',
          'hostperf:memory_bandwidth_bytes_per_second:baseline_ratio < %g' % c.baselineRatio.memory,
          'warning', 'Memory bandwidth ({{ $labels.kernel }}) below its baseline on {{ $labels.instance }}',
          'STREAM {{ $labels.kernel }} on {{ $labels.instance }} (job {{ $labels.job }}) runs at {{ $value | humanizePercentage }} of this binary\'s median of the last %s, below %g %% for %s.' % [p.words(c.baselineWindow), c.baselineRatio.memory * 100, p.words(c.forVeryLong)],
          c.forVeryLong),
        a('HostperfMemoryValidationErrors',
          p.hostLabels(c, 'increase(%s[%s]) > 0' % [m('hostperf_memory_validation_errors_total'), c.errorWindow]),
          'critical', 'STREAM results failed validation on {{ $labels.instance }}',
          'A STREAM run on {{ $labels.instance }} (job {{ $labels.job }}) failed validation in the last %s (hostperf_memory_validation_errors_total rose): memory or CPU returned wrong data.' % p.words(c.errorWindow)),
      ],
    }],
  },
}
