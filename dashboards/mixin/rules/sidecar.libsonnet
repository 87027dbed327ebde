local p = import '../lib/promql.libsonnet';
{
  prometheusRules+:: {
    local c = $._config,
    local m(name, matchers='') = p.metric(c, name, matchers),
    // process_* families come from every client library: only hostperf's targets count.
    local ours(expr) = '%s\n  and on(instance, job)\n%s' % [expr, m('hostperf_build_info')],
    // One budget resource's used share of its limit, labelled resource=<r>.
    local budget(r, unit) = |||
      label_replace(
        %s
          / on(instance, job)
        (%s > 0),
        "resource", "%s", "", ""
      )
    ||| % [m('hostperf_budget_%s_used_%s' % [r, unit]), m('hostperf_budget_%s_limit_%s' % [r, unit]), r],
    groups+: [{
      name: 'hostperf-sidecar-recording',
      rules: [
        // What the sidecar costs its host (docs/operator-guide.md, "Impact budget"): the whole
        // process's CPU in cores over sidecarWindow (the name keeps the default, 1h).
        {
          record: 'hostperf:sidecar_cpu_cores:rate1h',
          expr: p.hostLabels(c, ours('rate(%s[%s])' % [m('process_cpu_seconds_total'), c.sidecarWindow])),
        },
        // Resident memory's floor over sidecarWindow: STREAM's arrays
        // (probes.memory.memory_budget) are resident only while a run lasts.
        {
          record: 'hostperf:sidecar_resident_memory_bytes:min1h',
          expr: p.hostLabels(c, ours('min_over_time(%s[%s])' % [m('process_resident_memory_bytes'), c.sidecarWindow])),
        },
        // Each budget's use in the rolling hour as a share of its limit, per resource.
        {
          record: 'hostperf:sidecar_budget_used:ratio',
          expr: p.hostLabels(c, std.join('  or\n', [budget('cpu', 'seconds'), budget('disk', 'bytes'), budget('net', 'bytes')])),
        },
        // Whether each host's net probe uses its current peers_file (1) or
        // refused it and keeps the last good list (0), with the fleet label
        // filled: HostperfPeersFileInvalid counts them per fleet.
        {
          record: 'hostperf:net_peers_file_valid',
          expr: p.hostLabels(c, m('hostperf_net_peers_file_valid')),
        },
      ],
    }],
  },
}
