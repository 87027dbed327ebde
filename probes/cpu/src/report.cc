#include <spdlog/fmt/fmt.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/cpu/cpu_probe.h"

namespace hostperf::probes::cpu {

namespace {

using nlohmann::json;

// Field accessors that tolerate missing fields, nulls and wrong types: the
// report is printed for failed runs too.
std::optional<double> Number(const json& result, const char* key) {
  if (!result.is_object()) return std::nullopt;
  const auto it = result.find(key);
  if (it == result.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string Text(const json& result, const char* key, std::string_view fallback) {
  if (result.is_object()) {
    const auto it = result.find(key);
    if (it != result.end() && it->is_string() && !it->get<std::string>().empty()) {
      return it->get<std::string>();
    }
  }
  return std::string(fallback);
}

// CMake's compiler id, as an operator knows the compiler.
std::string CompilerName(const std::string& id) { return id == "GNU" ? "GCC" : id; }

// vcpuperf prints seconds with printf's %f.
std::string SecondsField(const json& result, const char* key) {
  const auto seconds = Number(result, key);
  return seconds ? fmt::format("{:f}s", *seconds) : "n/a";
}

std::string MicrosecondsField(const json& result, const char* key) {
  const auto seconds = Number(result, key);
  return seconds ? fmt::format("{:.0f} microseconds", *seconds * 1e6) : "n/a";
}

std::string ApproxSeconds(double seconds) {
  return seconds >= 1 ? fmt::format("~{:.1f}s", seconds) : fmt::format("~{:.3f}s", seconds);
}

// vcpuperf's "Expected time on ..." lines: this binary's baseline on this
// host, then the configured reference machines' times for this binary; the
// first shares the "Compiled with" line, as vcpuperf prints it.
std::string ExpectedTimes(const json& result) {
  std::vector<std::string> lines;
  if (const auto expected = Number(result, "expected_seconds")) {
    lines.push_back("Expected time on this host (baseline for this binary): " + ApproxSeconds(*expected));
  }
  std::size_t other_binaries = 0;
  if (const auto references = result.is_object() ? result.find("reference_times") : result.end();
      references != result.end() && references->is_object()) {
    if (const auto matching = references->find("matching"); matching != references->end() && matching->is_array()) {
      for (const json& reference : *matching) {
        if (const auto expected = Number(reference, "expected_seconds")) {
          lines.push_back("Expected time on " + Text(reference, "cpu", "unknown CPU") + ": " +
                          ApproxSeconds(*expected));
        }
      }
    }
    other_binaries = static_cast<std::size_t>(Number(*references, "other_binaries").value_or(0));
  }
  if (!Number(result, "expected_seconds")) {
    lines.push_back(fmt::format(
        "no baseline yet for this binary{} (calibrating: {:.0f}/{:.0f} runs)",
        Text(result, "baseline_file", "").empty() ? std::string() : " in " + Text(result, "baseline_file", ""),
        Number(result, "calibration_samples").value_or(0), Number(result, "calibration_runs").value_or(0)));
  }
  if (other_binaries > 0) {
    lines.push_back(fmt::format("({} configured reference time{} recorded with other binaries: not comparable)",
                                other_binaries, other_binaries == 1 ? "" : "s"));
  }
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : "\n") + line;
  return text;
}

// This run against this host's baseline, when there is one.
std::string BaselineRatioLine(const json& result) {
  const auto ratio = Number(result, "baseline_ratio");
  return ratio ? fmt::format("  CPU Time / this host's baseline: {:.3f}\n", *ratio) : std::string();
}

// "This machine's time" figures.
std::string TimeLines(const json& result) {
  return "  CPU Time: " + SecondsField(result, "cpu_seconds") + "\n" +
         "  Real Time:" + SecondsField(result, "real_seconds") + "\n";
}

std::string LoadTimeLines(const json& result) {
  return "This machine's high load time: " + MicrosecondsField(result, "high_load_median_seconds") + ".\n" +
         "This machine's low load time: " + MicrosecondsField(result, "low_load_median_seconds") + ".\n";
}

constexpr std::string_view kThrottleExplanation =
    "Some machines automatically throttle the CPU to save power.\n"
    "  This test can be done in <100 microseconds on modern CPUs.\n"
    "  Low load times much larger than 100-200us or much larger than the corresponding high load "
    "time\n"
    "    indicate low-load throttling, which can adversely affect small query / concurrent "
    "performance.\n";

}  // namespace

std::string FormatVcpuperfReport(const nlohmann::json& result, bool quiet) {
  if (quiet) return TimeLines(result) + LoadTimeLines(result);
  std::string report =
      fmt::format("Compiled with: {} {} (flags: {}; fingerprint {}) {}\n",
                  CompilerName(Text(result, "compiler", "unknown")), Text(result, "compiler_version", "unknown"),
                  Text(result, "build_flags", "none"), Text(result, "fingerprint", "unknown"), ExpectedTimes(result));
  report += "\nThis machine's time:\n" + TimeLines(result) + BaselineRatioLine(result);
  report += "\n" + std::string(kThrottleExplanation);
  report += "\n" + LoadTimeLines(result);
  return report;
}

}  // namespace hostperf::probes::cpu
