local g = import 'lib.libsonnet';
local c = g.colors;

function(config)
  local SEL = g.selectors(config).host;
  local t = config.dashboardThresholds;
  local ERRORS = g.steps(c.green, [[1, c.red]]);
  g.dashboard(config, 'hostperf-disk', 'hostperf / Disk',
              'vioperf-style disk checks per directory: throughput per physical core, fleet comparison, CRC '
              + 'verification and op latency.', ['hostperf', 'disk'], [
    g.row('Throughput'),
    g.timeseries('Write and Read per physical core (full runs)',
                 'Full-strength runs per directory, divided by physical cores. vioperf: at least 20 MB/s per '
                 + 'physical core (red below), 40 recommended (yellow below).',
                 [g.target('hostperf_full_run_figure{probe="disk", figure=~"write_bytes_per_second_per_core|read_bytes_per_second_per_core", %s}'
                           % SEL, '{{instance}} {{subject}} {{figure}}')], 'binBps',
                 g.steps(c.red, [[t.diskMinBytesPerCore, c.yellow], [t.diskRecommendedBytesPerCore, c.green]]),
                 min=0),
    g.timeseries('Scheduled Write and Read per physical core',
                 'Scheduled bursts (one thread, small file, idle I/O priority) per directory, divided by '
                 + 'physical cores: a trend judged against the host\'s own history and its fleet, not against '
                 + 'the full-run minimum.',
                 [g.target('hostperf:disk_throughput_per_core_bytes_per_second{test=~"Write|Read", %s}' % SEL,
                           '{{instance}} {{directory}} {{test}}')], 'binBps', min=0),
    g.timeseries('Throughput by test', 'Bytes per second of the last run of each test (ReWrite: read plus '
                                       + 'written).',
                 [g.target('hostperf_disk_throughput_bytes_per_second{%s}' % SEL,
                           '{{instance}} {{directory}} {{test}}')], 'binBps', min=0),
    g.timeseries('Ratio to fleet median', 'Throughput / the fleet\'s median for the same test, directory role and '
                                          + 'device class. Alert below 0.7 for an hour (with 3 or more hosts; with '
                                          + 'fewer, against the fastest of the group: HostperfDiskSlowerThanFleet).',
                 [g.target('hostperf:disk_throughput_bytes_per_second:fleet_ratio{%s}' % SEL,
                           '{{instance}} {{directory}} {{test}}')], 'percentunit',
                 g.steps(c.red, [[t.diskFleetRatio, c.green]]), min=0),
    g.timeseries('Seeks per second (SkipRead)', 'Non-contiguous block reads per second of the last SkipRead.',
                 [g.target('hostperf_disk_seeks_per_second{%s}' % SEL, '{{instance}} {{directory}}')], 'rps', min=0),
    g.timeseries('Directory success and failures (1h)',
                 'Each directory\'s last run: 1 succeeded, 0 failed (its throughput and seek figures are then '
                 + 'dropped, not left at the last good value); and its failed runs in the last hour by reason.',
                 [g.target('hostperf_disk_directory_success{%s}' % SEL, '{{instance}} {{directory}} success'),
                  g.target('increase(hostperf_disk_directory_failures_total{%s}[1h])' % SEL,
                           '{{instance}} {{directory}} {{reason}}', 'B')], 'none', min=0),
    g.row('Members of the array behind each directory'),
    g.timeseries('Member time per operation',
                 'Each block device of the array behind a directory (btrfs devices, md slaves): the time it '
                 + 'spent per read and per write during the probe\'s runs, from the kernel\'s counters. One disk '
                 + 'that under-performs without failing stands out here.',
                 [g.target('hostperf_disk_member_seconds_per_op{%s}' % SEL, '{{instance}} {{directory}} {{device}} {{op}}')],
                 's', min=0),
    g.timeseries('Member vs its siblings',
                 'A member\'s time per operation over the median of the other members of the same array. '
                 + 'Alert above 2 for 15 minutes.',
                 [g.target('hostperf_disk_member_service_ratio{%s}' % SEL, '{{instance}} {{directory}} {{device}} {{op}}')],
                 'none', g.steps(c.green, [[t.diskMemberSlowRatio, c.red]]), min=0),
    g.row('Latency and integrity'),
    g.timeseries('Op latency p99 vs weekly baseline', 'p99 over the last hour per operation, and its median of '
                                                      + 'the last week. Alert: p99 above twice the baseline and above 1 ms for an hour.',
                 [g.target('hostperf:disk_op_latency_seconds:p99_1h{%s}' % SEL, '{{instance}} {{directory}} {{op}}'),
                  g.target('hostperf:disk_op_latency_seconds:p99_1h_baseline_7d{%s}' % SEL,
                           '{{instance}} {{directory}} {{op}} baseline', 'B')], 's'),
    g.heatmap('Op latency distribution', 'Histogram of every block read and write.',
              'sum by (le) (rate(hostperf_disk_op_latency_seconds_bucket{%s}[$__rate_interval]))' % SEL, 's'),
    g.timeseries('Verify errors (1h)', 'Blocks read back with a wrong CRC32C, file, offset or generation. Any '
                                       + 'is critical.',
                 [g.target('increase(hostperf_disk_verify_errors_total{%s}[1h])' % SEL, '{{instance}} {{directory}}')],
                 'none', ERRORS, min=0),
    g.timeseries('Probe I/O', 'Bytes the probe writes and reads (counts against budget.disk_bytes_per_hour).',
                 [g.target('rate(hostperf_disk_written_bytes_total{%s}[$__rate_interval])' % SEL,
                           '{{instance}} {{directory}} written'),
                  g.target('rate(hostperf_disk_read_bytes_total{%s}[$__rate_interval])' % SEL,
                           '{{instance}} {{directory}} read', 'B')], 'binBps', min=0),
  ])
