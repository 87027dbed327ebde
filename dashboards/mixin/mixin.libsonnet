// The hostperf monitoring mixin: Prometheus recording rules, alerts and
// Grafana dashboards from one _config (config.libsonnet). See docs/mixin.md,
// "Using the mixin".
(import 'config.libsonnet') +
(import 'rules/cpu.libsonnet') +
(import 'rules/disk.libsonnet') +
(import 'rules/memory.libsonnet') +
(import 'rules/net.libsonnet') +
(import 'rules/exporter.libsonnet') +
(import 'rules/baselines.libsonnet') +
(import 'rules/sidecar.libsonnet') +
(import 'alerts/cpu.libsonnet') +
(import 'alerts/disk.libsonnet') +
(import 'alerts/net.libsonnet') +
(import 'alerts/memory.libsonnet') +
(import 'alerts/exporter.libsonnet') +
(import 'alerts/sidecar.libsonnet') +
{
  // The dashboards take the mixin's _config (overrides included) as theirs.
  grafanaDashboards:: { _config:: $._config } + (import 'dashboards/dashboards.libsonnet'),
}
