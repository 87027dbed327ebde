// The hostperf Grafana dashboards: filename -> dashboard JSON.
//
// Settings: the dashboard defaults (defaults.libsonnet), then the shared
// mixin settings (../config.libsonnet), then `_config` of whatever this
// object is merged onto, then `+ {_config+:: {...}}` on this object. Generate:
//   jsonnet -J dashboards/mixin -m dashboards/grafana dashboards/mixin/dashboards/dashboards.libsonnet
// (or the mixin's generate.sh).
local defaults = import 'defaults.libsonnet';
local shared = (import '../config.libsonnet')._config;

{
  _config:: defaults + shared + (if '_config' in super then super._config else {}),

  'hostperf-overview.json': (import 'overview.libsonnet')($._config),
  'hostperf-cpu.json': (import 'cpu.libsonnet')($._config),
  'hostperf-disk.json': (import 'disk.libsonnet')($._config),
  'hostperf-memory.json': (import 'memory.libsonnet')($._config),
  'hostperf-network.json': (import 'network.libsonnet')($._config),
  'hostperf-fleet.json': (import 'fleet.libsonnet')($._config),
}
