local g = import 'lib.libsonnet';
local c = g.colors;

function(config)
  local SEL = g.selectors(config).host;
  local t = config.dashboardThresholds;
  local LOW_LOAD = g.steps(c.green, [[t.lowLoadIdealSeconds, c.yellow], [t.lowLoadMaxSeconds, c.red]]);
  local BASELINE = g.steps(c.green, [[t.baselineRatio, c.red]]);
  local FLEET = g.steps(c.green, [[t.cpuFleetRatio, c.red]]);
  g.dashboard(config, 'hostperf-cpu', 'hostperf / CPU',
              'vcpuperf-style CPU checks: task timing under high and low load, throttling, the '
              + 'checksum-verified workload against its per-binary baseline and the fleet.', ['hostperf', 'cpu'], [
    g.row('Low-load throttling'),
    g.timeseries('Task median by load', 'Median time of the ~70 us task, after keeping the core busy (high) and '
                                        + 'after an idle gap (low). vcpuperf: low-load times much above 100-200 us '
                                        + 'mean throttling.',
                 [g.target('hostperf_cpu_task_median_seconds{%s}' % SEL, '{{instance}} {{load}}')], 's', LOW_LOAD),
    g.timeseries('Throttle ratio', 'Low-load median / high-load median. Alert above 2.',
                 [g.target('hostperf_cpu_throttle_ratio{%s}' % SEL, '{{instance}}')], 'none',
                 g.steps(c.green, [[t.throttleRatio, c.red]])),
    g.heatmap('Low-load task time distribution', 'Histogram of every low-load task timing.',
              'sum by (le) (rate(hostperf_cpu_task_seconds_bucket{load="low", %s}[$__rate_interval]))' % SEL, 's'),
    g.heatmap('High-load task time distribution', 'Histogram of every high-load task timing.',
              'sum by (le) (rate(hostperf_cpu_task_seconds_bucket{load="high", %s}[$__rate_interval]))' % SEL, 's'),
    g.row('Per core'),
    g.timeseries('Per-core low-load median', 'Per CPU: median of its last pinned low-load task medians (one CPU '
                                             + 'measured per scheduled run, in rotation: a CPU appears after CPUs x '
                                             + 'core_min_samples runs).',
                 [g.target('hostperf_cpu_core_task_median_seconds{%s}' % SEL, '{{instance}} cpu {{cpu}}')], 's',
                 LOW_LOAD, w=8),
    g.timeseries('Per-core ratio to siblings', 'Per CPU: its median / the median of the other CPUs\' medians. '
                                               + 'Above core_outlier_ratio (1.5) the core is named slow '
                                               + '(HostperfCpuCoreSlow).',
                 [g.target('hostperf_cpu_core_task_ratio{%s}' % SEL, '{{instance}} cpu {{cpu}}')], 'none',
                 g.steps(c.green, [[t.coreOutlierRatio, c.red]]), w=8),
    g.timeseries('Per-core frequency', 'cpufreq\'s current frequency per CPU, read after each scheduled run; '
                                       + 'empty where the kernel has no cpufreq (VMs).',
                 [g.target('hostperf_cpu_core_frequency_hertz{%s}' % SEL, '{{instance}} cpu {{cpu}}')], 'hertz',
                 w=8),
    g.table('Power settings', 'cpufreq driver, governor, energy_performance_preference and pstate status of cpu0; '
                              + 'empty where the kernel has no cpufreq (VMs). See the runbook for the wrong ones.',
            [g.target('hostperf_cpu_power_info{%s}' % SEL, instant=true, format='table')], 'none',
            hide=['Time', 'Value', '__name__']),
    g.bargauge('Idle states enabled', 'CPUs with each cpuidle state enabled (deep states with a long exit latency '
                                      + 'slow low-load work); empty where the kernel has no cpuidle states (VMs).',
               [g.target('hostperf_cpu_idle_state_enabled_cores{%s}' % SEL, '{{instance}} {{state}}',
                         instant=true)], 'none', g.steps(c.blue), min=0),
    g.row('Workload and baselines'),
    g.timeseries('Workload CPU time vs baseline', 'CPU time of the checksum-verified scheduled workload and this '
                                                  + 'binary\'s baseline (from the config or calibrated on the first runs).',
                 [g.target('hostperf_cpu_workload_cpu_seconds{mode="scheduled", %s}' % SEL, '{{instance}} cpu time'),
                  g.target('hostperf_cpu_baseline_seconds{%s}' % SEL, '{{instance}} baseline {{fingerprint}}', 'B')],
                 's'),
    g.timeseries('Ratio to own baseline', 'Workload CPU time / baseline. Alert above 1.2 for 30 minutes.',
                 [g.target('hostperf:cpu_baseline_ratio:by_binary{%s}' % SEL, '{{instance}} {{fingerprint}}')],
                 'none', BASELINE),
    g.timeseries('Ratio to fleet median', 'Workload CPU time / median of the fleet\'s hosts with the same binary '
                                          + 'fingerprint and CPU model. Alert above 1.2 for 30 minutes (with 3 or more hosts).',
                 [g.target('hostperf:cpu_workload_cpu_seconds:fleet_ratio{%s}' % SEL, '{{instance}} {{cpu_model}}')],
                 'none', FLEET),
    g.timeseries('Real time vs CPU time', 'Wall-clock vs CPU time of the workload (scheduled and full). Real '
                                          + 'time well above CPU time: the host is contended.',
                 [g.target('hostperf_cpu_workload_real_seconds{%s}' % SEL, '{{instance}} real {{mode}}'),
                  g.target('hostperf_cpu_workload_cpu_seconds{%s}' % SEL, '{{instance}} cpu {{mode}}', 'B')], 's'),
    g.timeseries('Checksum errors (1h)', 'Workload runs with a wrong checksum in the last hour. Any is critical.',
                 [g.target('increase(hostperf_cpu_workload_errors_total{%s}[1h])' % SEL, '{{instance}}')], 'none',
                 g.steps(c.green, [[1, c.red]]), min=0),
    g.timeseries('Steal time', 'CPU time stolen by the hypervisor, all CPUs.',
                 [g.target('rate(hostperf_host_cpu_steal_seconds_total{%s}[$__rate_interval])' % SEL, '{{instance}}')],
                 'percentunit', min=0),
    g.row('Host'),
    g.table('Host facts', 'CPU model, governor, cores and cache from sysfs and /proc; binary fingerprint.',
            [g.target('hostperf_host_info{%s}' % SEL, instant=true, format='table'),
             g.target('hostperf_host_physical_cores{%s}' % SEL, instant=true, format='table', ref='B'),
             g.target('hostperf_host_logical_cpus{%s}' % SEL, instant=true, format='table', ref='C'),
             g.target('hostperf_host_llc_bytes{%s}' % SEL, instant=true, format='table', ref='D'),
             g.target('hostperf_build_info{%s}' % SEL, instant=true, format='table', ref='E')], 'none', w=24,
            merge=true, hide=['Time', 'Value #A', 'Value #E', '__name__'],
            rename={ 'Value #B': 'physical cores', 'Value #C': 'logical CPUs', 'Value #D': 'LLC' },
            overrides=[g.columnOverride('LLC', 'bytes')]),
  ])
