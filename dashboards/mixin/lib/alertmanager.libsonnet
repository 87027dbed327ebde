// The example Alertmanager route and inhibition for the hostperf alerts, with
// the mixin's fleet and host labels (rendered by generate.sh to
// dashboards/alertmanager/hostperf-alertmanager.yml).
function(c) {
  local scope = [c.fleetLabel, c.hostLabel],
  route: {
    receiver: 'hostperf',
    // One notification per alert and host: a dead host is one group, not one per observer.
    group_by: ['alertname'] + scope,
    group_wait: '30s',
    group_interval: '5m',
    repeat_interval: '4h',
    routes: [
      { receiver: 'hostperf-critical', matchers: ['severity=critical', 'alertname=~Hostperf.*'] },
      { receiver: 'hostperf-info', matchers: ['severity=info', 'alertname=~Hostperf.*'], repeat_interval: '24h' },
    ],
  },
  inhibit_rules: [
    // A dead exporter explains everything else about its host: its observers
    // see it unreachable, its probes go stale.
    {
      source_matchers: ['alertname=HostperfExporterDown'],
      target_matchers: ['alertname=~Hostperf.*', 'alertname!=HostperfExporterDown'],
      equal: scope,
    },
    // A host unreachable or degraded as a whole explains the link alerts into it.
    {
      source_matchers: ['alertname=~HostperfNetHostUnreachable|HostperfNetHostDegraded'],
      target_matchers: ['alertname=HostperfNetLinkDegraded'],
      equal: scope,
    },
    // A directory slower than its fleet is usually slower than its own baseline
    // too (a regression on one host): one notification, the one naming the fleet.
    {
      source_matchers: ['alertname=HostperfDiskSlowerThanFleet'],
      target_matchers: ['alertname=HostperfDiskSlowerThanBaseline'],
      equal: scope + ['directory', 'test'],
    },
    // A host without a working responder may fail its own network probe too.
    {
      source_matchers: ['alertname=HostperfNetHostUnreachable'],
      target_matchers: ['alertname=HostperfProbeStale', 'probe=net'],
      equal: scope,
    },
  ],
  // Fill in your notification settings (email_configs, webhook_configs, ...).
  receivers: [{ name: 'hostperf' }, { name: 'hostperf-critical' }, { name: 'hostperf-info' }],
}
