// Small local helpers that build Grafana dashboard JSON (no grafonnet).
local ds = { type: 'prometheus', uid: '${datasource}' };

{
  ds: ds,
  colors: { green: 'green', yellow: 'yellow', orange: 'orange', red: 'red', blue: 'blue' },

  // Threshold steps: base colour, then [value, colour] pairs.
  steps(base, pairs=[]):: {
    mode: 'absolute',
    steps: [{ color: base, value: null }] + [{ color: p[1], value: p[0] } for p in pairs],
  },

  // Value mapping: {value: [text, colour or null]}.
  valueMap(m):: [{
    type: 'value',
    options: {
      [k]: { text: m[k][0] } + (if m[k][1] != null then { color: m[k][1] } else {})
      for k in std.objectFields(m)
    },
  }],

  target(expr, legend='', ref='A', instant=false, format=null):: {
    datasource: ds,
    expr: expr,
    legendFormat: legend,
    refId: ref,
    range: !instant,
    instant: instant,
  } + (if format != null then { format: format } else {}),

  // A panel without id and position; layout() assigns both from _w and _h.
  panel(kind, title, description, targets, unit, thresholds=null, w=12, h=8, options={}, custom=null,
        transformations=null, mappings=null, min=null, max=null, overrides=[], colorMode=null):: {
    _w:: w,
    _h:: h,
    type: kind,
    title: title,
    description: description,
    datasource: ds,
    targets: targets,
    options: options,
    fieldConfig: {
      defaults: { unit: unit }
                + (if thresholds != null then {
                     thresholds: thresholds,
                     color: { mode: if colorMode != null then colorMode
                                    else if std.member(['stat', 'bargauge', 'table', 'state-timeline'], kind)
                                    then 'thresholds' else 'palette-classic' },
                   } else {})
                + (if min != null then { min: min } else {})
                + (if max != null then { max: max } else {})
                + (if mappings != null then { mappings: mappings } else {})
                + (if kind == 'timeseries' then {
                     custom: {
                       drawStyle: 'line',
                       lineWidth: 1,
                       fillOpacity: 0,
                       showPoints: 'auto',
                       spanNulls: true,
                       thresholdsStyle: { mode: if thresholds != null then 'line+area' else 'off' },
                     },
                   } else {})
                + (if custom != null then { custom+: custom } else {}),
      overrides: overrides,
    },
  } + (if transformations != null then { transformations: transformations } else {}),

  timeseries(title, description, targets, unit, thresholds=null, w=12, h=8, min=null, options=null)::
    self.panel('timeseries', title, description, targets, unit, thresholds, w=w, h=h, min=min,
               options=if options != null then options else {
                 legend: { displayMode: 'table', placement: 'bottom', showLegend: true, calcs: ['lastNotNull', 'max'] },
                 tooltip: { mode: 'multi', sort: 'desc' },
               }),

  // Instant queries: one value per series, so "last" is the current value
  // (lastNotNull could show a stale one).
  reduceLast:: { calcs: ['last'], fields: '', values: false },

  bargauge(title, description, targets, unit, thresholds, w=12, h=8, min=null, max=null)::
    self.panel('bargauge', title, description, targets, unit, thresholds, w=w, h=h, min=min, max=max,
               options={ orientation: 'horizontal', displayMode: 'basic', showUnfilled: true,
                         reduceOptions: $.reduceLast }),

  stat(title, description, targets, unit, thresholds, w=12, h=8, mappings=null)::
    self.panel('stat', title, description, targets, unit, thresholds, w=w, h=h, mappings=mappings,
               options={ colorMode: 'background', graphMode: 'none', textMode: 'value_and_name',
                         justifyMode: 'auto', orientation: 'auto', reduceOptions: $.reduceLast }),

  heatmap(title, description, expr, unit, w=12, h=8)::
    self.panel('heatmap', title, description, [self.target(expr, '{{le}}', format='heatmap')], unit, w=w, h=h,
               options={
                 calculate: false,
                 cellGap: 1,
                 color: { mode: 'scheme', scheme: 'Oranges', steps: 64 },
                 yAxis: { axisPlacement: 'left', unit: unit },
                 rowsFrame: { layout: 'auto' },
                 tooltip: { show: true, yHistogram: true },
                 legend: { show: true },
               }),

  // A table of instant queries; hide: columns dropped, rename: column -> header.
  table(title, description, targets, unit, thresholds=null, w=12, h=8, hide=[], rename={}, overrides=[],
        merge=false, sortBy=null, extra=[], cellType=null)::
    self.panel('table', title, description, targets, unit, thresholds, w=w, h=h, overrides=overrides,
               options={ showHeader: true, cellHeight: 'sm' }
                       + (if sortBy != null then { sortBy: [{ displayName: sortBy[0], desc: sortBy[1] }] } else {}),
               custom=if cellType != null then { cellOptions: { type: cellType }, align: 'auto' } else null,
               transformations=(if merge then [{ id: 'merge', options: {} }] else [])
                               + extra
                               + [{ id: 'organize', options: {
                                 excludeByName: { [c]: true for c in hide },
                                 renameByName: rename,
                               } }]),

  // Per-column override of a table (unit, thresholds, cell colour).
  columnOverride(name, unit, thresholds=null, cellType=null, mappings=null):: {
    matcher: { id: 'byName', options: name },
    properties: [{ id: 'unit', value: unit }]
                + (if thresholds != null then [{ id: 'thresholds', value: thresholds },
                                               { id: 'color', value: { mode: 'thresholds' } }] else [])
                + (if cellType != null then [{ id: 'custom.cellOptions', value: { type: cellType } }] else [])
                + (if mappings != null then [{ id: 'mappings', value: mappings }] else []),
  },

  row(title):: { _row:: true, type: 'row', title: title, collapsed: false, panels: [] },

  // Assigns ids (1, 2, ... in order) and grid positions: panels flow left to
  // right and wrap at 24 columns; a row starts a new line.
  layout(items)::
    local step(state, p) =
      if std.objectHasAll(p, '_row') then
        local y = if state.x > 0 then state.y + state.rowH else state.y;
        state { x: 0, y: y + 1, rowH: 0,
                out+: [p { id: std.length(state.out) + 1, gridPos: { x: 0, y: y, w: 24, h: 1 } }] }
      else
        local wrap = state.x + p._w > 24;
        local x = if wrap then 0 else state.x;
        local y = if wrap then state.y + state.rowH else state.y;
        local rowH = if wrap then 0 else state.rowH;
        state { x: x + p._w, y: y, rowH: std.max(rowH, p._h),
                out+: [p { id: std.length(state.out) + 1, gridPos: { x: x, y: y, w: p._w, h: p._h } }] };
    std.foldl(step, items, { x: 0, y: 0, rowH: 0, out: [] }).out,

  // Label matchers of the variables, for hostperf series: fleet (cluster), job, instance.
  selectors(config):: {
    local extra = if config.hostperfSelector != '' then config.hostperfSelector + ', ' else '',
    // the cluster and job a host belongs to: fleet aggregations (medians, observers) use it
    fleet: extra + '%s=~"$cluster", job=~"$job"' % config.fleetLabel,
    // one host or a set of hosts
    host: self.fleet + ', instance=~"$instance"',
  },

  // Adds a `fleet` label: the fleet label's value, or the fallback label's
  // where the series has no fleet label, so medians compare a host only with its own fleet.
  fleetOf(config, expr)::
    'label_replace(label_replace(%s, "fleet", "$1", "%s", "(.*)"), "fleet", "$1", "%s", "(.+)")'
    % [expr, config.fleetFallbackLabel, config.fleetLabel],

  dashboard(config, uid, title, description, tags, panels):: {
    local sel = $.selectors(config),
    local extra = if config.hostperfSelector != '' then config.hostperfSelector + ', ' else '',
    local all = { selected: true, text: ['All'], value: ['$__all'] },
    local queryVar(name, label, query, allValue) = {
      name: name,
      label: label,
      type: 'query',
      datasource: ds,
      query: { query: query, refId: name },
      refresh: 2,
      multi: true,
      includeAll: true,
      allValue: allValue,
      current: all,
      hide: 0,
      sort: 1,
      regex: '',
      options: [],
    },
    uid: uid,
    title: title,
    description: description,
    tags: tags,
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    timezone: '',
    refresh: '1m',
    time: { from: 'now-24h', to: 'now' },
    fiscalYearStartMonth: 0,
    liveNow: false,
    weekStart: '',
    links: [{ title: 'hostperf', type: 'dashboards', tags: ['hostperf'], asDropdown: true, includeVars: true,
              keepTime: true, targetBlank: false, icon: 'external link', tooltip: '', url: '' }],
    annotations: { list: [] },
    templating: { list: [
      { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus',
        current: { selected: false, text: 'default', value: 'default' }, hide: 0, refresh: 1, regex: '',
        options: [] },
      // ".*" for All: series without the fleet label (one fleet per job) still match.
      queryVar('cluster', 'Cluster', 'label_values(hostperf_build_info%s, %s)'
                                     % [if extra != '' then '{%s}' % config.hostperfSelector else '',
                                        config.fleetLabel], '.*'),
      queryVar('job', 'Job', 'label_values(hostperf_build_info{%s%s=~"$cluster"}, job)'
                             % [extra, config.fleetLabel], '.+'),
      queryVar('instance', 'Instance', 'label_values(hostperf_build_info{%s}, instance)' % sel.fleet, '.+'),
    ] },
    panels: $.layout(panels),
  },
}
