// Prometheus rule files as readable YAML: keys in the usual order, multi-line
// expressions as block scalars, every other string JSON-quoted (valid YAML).
local order = ['name', 'interval', 'alert', 'record', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'];
// std.escapeStringJson is slow in jsonnet 0.18 (a loop over characters); the
// strings here hold no control characters, so escaping \ and " is enough.
local q(s) = '"' + std.strReplace(std.strReplace(s, '\\', '\\\\'), '"', '\\"') + '"';
local block(s, indent) =
  local lines = std.split(std.rstripChars(s, '\n'), '\n');
  '|-\n' + std.join('\n', [if l == '' then '' else indent + l for l in lines]);
local scalar(v, indent) =
  if std.isString(v) then (if std.length(std.split(std.rstripChars(v, '\n'), '\n')) > 1 then block(v, indent) else q(std.rstripChars(v, '\n')))
  else std.toString(v);
local first = ['severity', 'summary', 'description'];
local mapKeys(m) = [k for k in first if std.objectHas(m, k)] + [k for k in std.objectFields(m) if std.count(first, k) == 0];
local map(m, indent) = std.join('', ['\n' + indent + k + ': ' + scalar(m[k], indent + '  ') for k in mapKeys(m)]);
local rule(r, indent) =
  local keys = [k for k in order if std.objectHas(r, k)];
  std.join('\n' + indent, [
    k + ':' + (if std.isObject(r[k]) then map(r[k], indent + '  ') else ' ' + scalar(r[k], indent + '  '))
    for k in keys
  ]);
{
  // header: comment lines (without '#').
  ruleFile(groups, header=[]):: std.join('', ['#' + (if l == '' then '' else ' ' + l) + '\n' for l in header]) +
    'groups:\n' + std.join('', [
      '  - ' + rule({ name: g.name } + (if std.objectHas(g, 'interval') then { interval: g.interval } else {}), '    ') + '\n' +
      '    rules:\n' +
      std.join('', ['      - ' + rule(r, '        ') + '\n' for r in g.rules])
      for g in groups
    ]),
}
