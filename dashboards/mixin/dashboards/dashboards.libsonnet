// The hostperf Grafana dashboards: filename -> dashboard JSON.
//
// The shared mixin _config (when this object is merged onto it, or merged
// with `{_config+:: ...}`) wins over the dashboard defaults. Generate with:
//   jsonnet -J dashboards/mixin -m dashboards/grafana dashboards/mixin/dashboards/dashboards.libsonnet
local defaults = import 'defaults.libsonnet';

{
  _config:: defaults + (if '_config' in super then super._config else {}),

  'hostperf-overview.json': (import 'overview.libsonnet')($._config),
  'hostperf-cpu.json': (import 'cpu.libsonnet')($._config),
  'hostperf-disk.json': (import 'disk.libsonnet')($._config),
  'hostperf-memory.json': (import 'memory.libsonnet')($._config),
  'hostperf-network.json': (import 'network.libsonnet')($._config),
  'hostperf-fleet.json': (import 'fleet.libsonnet')($._config),
}
