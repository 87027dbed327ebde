// The example Alertmanager route and inhibition for the hostperf alerts, with
// the mixin's fleet and host labels (rendered by generate.sh to
// dashboards/alertmanager/hostperf-alertmanager.yml).
function(c) {
  local scope = [c.fleetLabel, c.hostLabel],
  route: {
    receiver: 'hostperf',
    // One notification per alert name and fleet: a mass event (a rack, a
    // cluster, a bad config rolled out everywhere) is one notification listing
    // its hosts, not one per host; a dead host is one group, not one per
    // observer. Cluster- and rack-pair-scoped alerts carry no host label and
    // group the same way.
    group_by: ['alertname', c.fleetLabel],
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
    // A host unreachable, degraded or slow as a whole explains the link alerts into it.
    {
      source_matchers: ['alertname=~HostperfNetHostUnreachable|HostperfNetHostDegraded|HostperfNetHostThroughputLow'],
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
    // A whole group of a cluster (role, device class, test) below its
    // baselines explains each of its hosts' baseline alerts: the rule already
    // holds them back; this covers an evaluation where the two disagree.
    {
      source_matchers: ['alertname=HostperfDiskClusterSlowerThanBaseline'],
      target_matchers: ['alertname=HostperfDiskSlowerThanBaseline'],
      equal: [c.fleetLabel, 'role', 'device_class', 'test'],
    },
    // A degraded rack pair explains the link alerts between its two racks.
    // The rules already leave those links out of link and host-level alerts
    // (both directions); this covers an evaluation where the two disagree. Link
    // alerts carry the target's rack as <rack> and the observer's as
    // peer_<rack>, so this matches the direction the pair alert names
    // (equal needs the same label names; the reverse direction is left to
    // the rules). Host-level alerts are not inhibited: their counts already
    // leave the pair's links out, so one that fires has another cause.
    {
      source_matchers: ['alertname=HostperfNetRackPairDegraded'],
      target_matchers: ['alertname=HostperfNetLinkDegraded'],
      equal: [c.fleetLabel, c.rackLabel, 'peer_' + c.rackLabel],
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
