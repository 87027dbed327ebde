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

  // Per-link series (observer instance -> peer) as the daemon names them:
  // `host` is the target's peers_file name (from `peer`), `observer` the
  // observing host (from `instance`), the observer's own rack label becomes
  // observer_<rack>. Only hostperf:host_identity and the link re-labelling
  // below use it directly.
  linkLabelsRaw(c, expr)::
    local r = c.rackLabel;
    // Written on one line each: re-indenting deep expressions costs jsonnet
    // a stack frame per line.
    'label_replace(label_replace(%s, "observer_%s", "$1", "%s", "(.*)"), "%s", "", "", "")' % [
      self.fleet(c, self.hostFrom(c, self.hostFrom(c, expr, 'peer', c.hostLabel), 'instance', c.observerLabel)), r, r, r,
    ],

  // Per-link series re-labelled through the host identity
  // (hostperf:net_target_identity, rules/net.libsonnet): `host` is the
  // target's canonical host (its scrape target) and the target's rack is
  // added, so network alerts name a host as its other alerts do. A target
  // name no identity knows keeps its peers_file name (and is reported by
  // HostperfHostIdentityUnresolved).
  linkLabels(c, expr)::
    'label_replace(\n  label_replace(%s, "net_name", "$1", "%s", "(.*)")\n    * on(%s, net_name) group_left(%s, %s)\n  hostperf:net_target_identity,\n  "net_name", "", "", ""\n)' % [
      self.linkLabelsRaw(c, expr), c.hostLabel, c.fleetLabel, c.hostLabel, c.rackLabel,
    ],

  // The labels of hostperf:net_link_identity (rules/net.libsonnet), one
  // series per link: a per-link series gets them by one join on the link
  // (instance, job, peer) instead of running linkLabels' chain of
  // label_replace and its identity join itself (most of the per-link rules'
  // cost at 1000 hosts: docs/benchmarks.md, rule evaluation).
  linkIdentityLabels(c):: [c.hostLabel, c.observerLabel, c.fleetLabel, c.rackLabel, 'observer_' + c.rackLabel],
  linkIdentityKey(c):: std.set(['instance', 'job', 'peer', c.fleetLabel, c.fleetFallbackLabel, c.rackLabel]),
  withLinkIdentity(c, expr)::
    '(\n%s\n)\n  * on(instance, job, peer) group_left(%s)\nhostperf:net_link_identity' % [
      self.indent(expr), std.join(', ', self.linkIdentityLabels(c)),
    ],

  // A Prometheus duration ('90s', '10m', '1h30m', '7d') in seconds.
  seconds(d)::
    local units = { s: 1, m: 60, h: 3600, d: 86400, w: 604800, y: 31536000 };
    local step(acc, ch) =
      if std.objectHas(units, ch) then { total: acc.total + std.parseInt(acc.n) * units[ch], n: '' }
      else { total: acc.total, n: acc.n + ch };
    local r = std.foldl(step, std.stringChars(d), { total: 0, n: '' });
    assert r.n == '' : 'not a duration of whole units: ' + d;
    r.total,

  // `up` of the targets that must be up (exporterSelector).
  up(c):: 'up' + (if c.exporterSelector == '' then '' else '{%s}' % c.exporterSelector),

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

  alert(c, name, expr, severity, summary, description, forDur=null, labels={}, keepFiringFor=null):: {
    alert: name,
    expr: expr,
    [if forDur != null then 'for']: forDur,
    [if keepFiringFor != null then 'keep_firing_for']: keepFiringFor,
    labels: { severity: severity } + labels,
    annotations: {
      summary: summary,
      description: description,
      runbook_url: std.format(c.runbookURLPattern, std.asciiLower(name)),
    },
  },
}
