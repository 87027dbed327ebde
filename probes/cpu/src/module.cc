#include "hostperf/probes/cpu/module.h"

#include <cstdio>

#include "hostperf/probes/cpu/cpu_probe.h"

namespace hostperf::probes::cpu {
namespace {

// vcpuperf prints three; an operator may keep a reference per CPU generation
// and binary.
constexpr std::size_t kMaxReferenceTimes = 64;

void DeclareReferenceTime(config::Schema& schema, ReferenceTime& reference) {
  schema.String("cpu", &reference.cpu);
  schema.String("fingerprint", &reference.fingerprint);
  schema.Number("seconds", &reference.seconds,
                {0, 1e6, false, "(must be a number of seconds greater than 0, at most 1e6)"});
}

void DeclareKeys(config::Schema& schema, CpuProbeConfig& cpu) {
  schema.Uint("calibration_runs", &cpu.calibration_runs, 1, 100);
  schema.Uint("throttle_samples", &cpu.throttle_samples, 1, 100000);
  schema.Duration("low_load_gap", &cpu.low_load_gap, config::kAnyDuration);
  schema.Duration("high_load_spin", &cpu.high_load_spin, config::kAnyDuration);
  schema.Uint("core_window", &cpu.core_window, 1, 100);
  schema.Uint("core_min_samples", &cpu.core_min_samples, 1, 100);
  schema.Number("core_outlier_ratio", &cpu.core_outlier_ratio,
                {1, 100, false, "(must be a ratio greater than 1, at most 100)"});
  schema.Uint("max_cores", &cpu.max_cores, 0, 8192);
  schema.DurationTable("baselines", &cpu.baselines, config::kPositive, "{ \"0123abcd0123abcd\" = \"48ms\" }");
  schema.TableArray("reference_times", &cpu.reference_times, &DeclareReferenceTime, {"cpu", "fingerprint", "seconds"},
                    kMaxReferenceTimes,
                    "[{ cpu = \"Xeon Gold 6248, 2.50GHz\", fingerprint = \"0123abcd0123abcd\", seconds = 6.1 }]");
}

config::SectionSchema Section() {
  return config::DescribeSection<CpuProbeConfig>("cpu", {true, 5min, 1min}, DeclareKeys);
}

constexpr const char* kCpuUsage = R"(usage: hostperf cpu [-q] [--json]

vcpuperf: CPU Time and Real Time of a fixed workload, then high- and low-load
times of a short task (low load much slower than high load: power-saving
throttling). CPU Time is compared with this binary's baseline on this host
(the daemon calibrates it in its state directory) and with the reference
machines' times in probes.cpu.reference_times.

  -q, --quiet   only the four times
  --json        the result as JSON, as the run API returns it
  -h, --help    this help
)";

// `hostperf cpu [-q] [--json]`: vcpuperf's report (or the JSON result).
int Command(const std::vector<std::string>& args, const CommandContext& context) {
  bool quiet = false;
  bool json = false;
  for (const auto& arg : args) {
    if (arg == "-q" || arg == "--quiet") {
      quiet = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kCpuUsage, stdout);
      return 0;
    } else {
      return context.usage_error("unknown option \"" + arg + "\"");
    }
  }
  const auto outcome = context.run_full(nullptr, {});
  if (json) {
    PrintJsonResult(outcome);
  } else if (!outcome.result.empty()) {
    std::fputs(FormatVcpuperfReport(outcome.result, quiet).c_str(), stdout);
  }
  return CommandExitCode("cpu", outcome);
}

}  // namespace

std::vector<Figure> CpuFigures(const nlohmann::json& result) {
  std::vector<Figure> out;
  if (const auto low = NumberField(result, "low_load_median_seconds")) {
    out.push_back({"low_load_median_seconds", "", "low-load median", *low, FormatNumber("%.0f µs", *low / kMicro),
                   "pass ≤ 200 µs, warn ≤ 1000 µs", AtMost(*low, 200e-6, 1000e-6)});
  }
  if (const auto ratio = NumberField(result, "throttle_ratio")) {
    out.push_back({"throttle_ratio", "", "low/high load ratio", *ratio, FormatNumber("%.2f", *ratio), "pass ≤ 2",
                   *ratio <= 2 ? Verdict::kPass : Verdict::kFail});
  }
  // The slowest core against its siblings, once the rotation has two cores
  // with a median (scheduled runs; the threshold is the configured ratio).
  if (const auto cores = result.find("cores"); cores != result.end() && cores->is_object()) {
    const auto slowest = cores->find("slowest");
    const auto limit = NumberField(*cores, "outlier_ratio");
    if (slowest != cores->end() && slowest->is_object() && limit) {
      const auto cpu = NumberField(*slowest, "cpu");
      const auto ratio = NumberField(*slowest, "ratio");
      if (cpu && ratio) {
        out.push_back({"slowest_core_task_ratio", FormatNumber("cpu %.0f", *cpu), "slowest core / its siblings", *ratio,
                       FormatNumber("%.2f×", *ratio), FormatNumber("pass ≤ %g", *limit),
                       *ratio > *limit ? Verdict::kWarn : Verdict::kPass});
      }
    }
  }
  if (const auto baseline = NumberField(result, "baseline_ratio")) {
    out.push_back({"baseline_ratio", "", "CPU time / baseline", *baseline, FormatNumber("%.3f", *baseline),
                   "trend within one binary", Verdict::kInfo});
  }
  return out;
}

const ProbeModule kModule = {
    .name = "cpu",
    .create = &CreateCpuProbe,
    .config_section = &Section,
    .parse_options = nullptr,
    .figures = &CpuFigures,
    .command = {"cpu",
                "  cpu [-q] [--json]   vcpuperf: CPU speed against this binary's baseline and\n"
                "                      low-load throttling (-q: only the four figures;\n"
                "                      --json: the result as JSON, as the run API returns it)\n",
                &Command, "vcpuperf"},
    // Scheduled runs; timeout and internal_error are the framework's.
    .failure_reasons = {"checksum_mismatch"},
};

}  // namespace hostperf::probes::cpu
