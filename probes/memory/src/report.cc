#include <spdlog/fmt/fmt.h>

#include <optional>
#include <string>

#include "hostperf/probes/memory/memory_probe.h"

namespace hostperf::probes::memory {

namespace {

using nlohmann::json;

std::optional<double> Number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string Capitalized(std::string name) {
  if (!name.empty() && name[0] >= 'a' && name[0] <= 'z') name[0] = static_cast<char>(name[0] - 'a' + 'A');
  return name;
}

constexpr std::string_view kRule = "-------------------------------------------------------------\n";

}  // namespace

std::string FormatStreamReport(const nlohmann::json& result) {
  const double elements = Number(result, "array_elements").value_or(0);
  const double array_bytes = Number(result, "array_bytes").value_or(0);
  const double iterations = Number(result, "iterations").value_or(0);
  std::string report(kRule);
  report += "STREAM (hostperf memory): double precision, 8 bytes per element\n";
  report += kRule;
  report += fmt::format("Array size = {:.0f} (elements)\n", elements);
  report +=
      fmt::format("Memory per array = {:.1f} MiB (= {:.1f} GiB).\n", array_bytes / (1 << 20), array_bytes / (1 << 30));
  report += fmt::format("Total memory required = {:.1f} MiB (= {:.1f} GiB).\n", 3 * array_bytes / (1 << 20),
                        3 * array_bytes / (1 << 30));
  report += fmt::format("Each kernel will be executed {:.0f} times.\n", iterations);
  report += " The *best* time for each kernel (excluding the first iteration)\n";
  report += " will be used to compute the reported bandwidth.\n";
  report += kRule;
  report += fmt::format("Number of Threads counted = {:.0f} (pinned: {:.0f})\n", Number(result, "threads").value_or(0),
                        Number(result, "pinned_threads").value_or(0));
  const double llc = Number(result, "llc_total_bytes").value_or(0);
  const bool llc_known = result.is_object() && result.value("llc_known", false);
  const bool cache_resident = !result.is_object() || result.value("cache_resident", true);
  if (!llc_known) {
    report +=
        fmt::format("Last-level cache size unknown (assumed {:.0f} MiB): arrays not proven to exceed 4x the LLC.\n",
                    llc / (1 << 20));
  } else {
    report +=
        fmt::format("Last-level cache {:.1f} MiB: arrays {} 4x the LLC{}.\n", llc / (1 << 20),
                    cache_resident ? "are below" : "exceed", cache_resident ? " (figures may be cache bandwidth)" : "");
  }
  report += kRule;
  report += "Function    Best Rate MB/s  Avg time     Min time     Max time\n";
  if (result.is_object() && result.contains("kernels") && result["kernels"].is_array()) {
    for (const json& kernel : result["kernels"]) {
      const std::string name = kernel.is_object() ? kernel.value("kernel", std::string("?")) : std::string("?");
      report += fmt::format("{:<11}{:12.1f}  {:11.6f}  {:11.6f}  {:11.6f}\n", Capitalized(name) + ":",
                            Number(kernel, "best_bytes_per_second").value_or(0) * 1e-6,
                            Number(kernel, "avg_seconds").value_or(0), Number(kernel, "min_seconds").value_or(0),
                            Number(kernel, "max_seconds").value_or(0));
    }
  }
  report += kRule;
  if (result.is_object() && result.contains("validation") && result["validation"].is_object()) {
    report += result["validation"].value("message", std::string("validation: n/a")) + "\n";
  } else {
    report += "Solution not validated (the run did not complete)\n";
  }
  report += kRule;
  return report;
}

}  // namespace hostperf::probes::memory
