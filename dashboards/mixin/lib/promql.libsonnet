// PromQL building blocks shared by the rules and alerts. Every function takes
// the mixin's _config as `c`.
{
  // A hostperf metric with the configured selector and extra matchers.
  metric(c, name, matchers=''):: (
    local parts = std.filter(function(s) s != '', [c.hostperfSelector, matchers]);
    name + (if std.length(parts) == 0 then '' else '{' + std.join(', ', parts) + '}')
  ),

  // Indents every line of a (multi-line) expression.
  indent(expr, by='  ')::
    std.join('\n', [if l == '' then l else by + l for l in std.split(std.rstripChars(expr, '\n'), '\n')]),

  // f(inner, args) laid out with the inner expression indented.
  call(f, expr, args):: '%s(\n%s,\n  %s\n)' % [f, self.indent(expr), args],

  // The fleet label, filled from the fallback label where a series has none:
  // "c1;db" keeps c1, ";db" becomes db.
  fleet(c, expr)::
    self.call('label_replace',
              self.call('label_join', expr, '"%(f)s", ";", "%(f)s", "%(j)s"' % { f: c.fleetLabel, j: c.fleetFallbackLabel }),
              '"%(f)s", "$1$2", "%(f)s", ";(.*)|(.+);[^;]*"' % { f: c.fleetLabel }),

  // dst := src with the port removed (hostFromInstanceRegex), or src whole.
  hostFrom(c, expr, src, dst)::
    self.call('label_replace',
              self.call('label_replace', expr, '"%s", "$1", "%s", "(.*)"' % [dst, src]),
              '"%s", "$1", "%s", "%s"' % [dst, dst, c.hostFromInstanceRegex]),

  // Per-host series: the host label from `instance` and the filled fleet label.
  hostLabels(c, expr):: self.fleet(c, self.hostFrom(c, expr, 'instance', c.hostLabel)),

  // Per-link series (observer instance -> peer): `host` is the target (from
  // `peer`), `observer` the observing host (from `instance`).
  linkLabels(c, expr)::
    self.fleet(c, self.hostFrom(c, self.hostFrom(c, expr, 'peer', c.hostLabel), 'instance', c.observerLabel)),

  // Grouping of host-level series.
  hostBy(c):: '%s, %s' % [c.fleetLabel, c.hostLabel],

  // A Prometheus duration in words for descriptions: '15m' -> '15 minutes';
  // anything but one number and unit is returned as is.
  words(d)::
    local units = { s: 'second', m: 'minute', h: 'hour', d: 'day', w: 'week' };
    local n = std.substr(d, 0, std.length(d) - 1);
    local u = std.substr(d, std.length(d) - 1, 1);
    local digits = std.length(n) > 0 && std.length([ch for ch in std.stringChars(n) if std.count(std.stringChars('0123456789'), ch) == 0]) == 0;
    if digits && std.objectHas(units, u) then
      n + ' ' + units[u] + (if n == '1' then '' else 's')
    else d,

  alert(c, name, expr, severity, summary, description, forDur=null, labels={}):: {
    alert: name,
    expr: expr,
    [if forDur != null then 'for']: forDur,
    labels: { severity: severity } + labels,
    annotations: {
      summary: summary,
      description: description,
      runbook_url: std.format(c.runbookURLPattern, std.asciiLower(name)),
    },
  },
}
