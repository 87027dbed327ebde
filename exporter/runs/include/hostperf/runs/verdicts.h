#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace hostperf::exporter {

// A result against the documented thresholds (DESIGN.md section 9).
enum class Verdict { kPass, kWarn, kFail, kInfo };  // kInfo: no threshold applies
std::string_view ToString(Verdict verdict);

// One headline figure of a probe result.
struct Figure {
  std::string name;       // metric label, base units: "low_load_median_seconds"
  std::string subject;    // directory or peer; "" for the host
  std::string title;      // "low-load median"
  double value = 0;       // base units (seconds, bytes per second, ratio)
  std::string shown;      // "153 µs", "45.2 MB/s per core"
  std::string threshold;  // "pass ≤ 200 µs, warn ≤ 1000 µs"
  Verdict verdict = Verdict::kInfo;
};

// The headline figures of a probe's result JSON (scheduled or full), judged
// against the documented thresholds: cpu low-load median (200 µs / 1 ms) and
// throttle ratio (2); disk Write and Read per physical core (20 / 40 MB/s);
// net RTT (200 / 1000 µs), clock offset (1 s) and TCP throughput
// (100 / 800 MB/s); memory bandwidth for information. MB = 2^20 bytes, as the
// reference tools count. Unknown probes and missing fields give no figures.
std::vector<Figure> HeadlineFigures(std::string_view probe, const nlohmann::json& result);

}  // namespace hostperf::exporter
