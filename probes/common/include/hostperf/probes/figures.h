#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostperf::probes {

// A result against the documented thresholds (docs/thresholds.md).
enum class Verdict { kPass, kWarn, kFail, kInfo };  // kInfo: no threshold applies
std::string_view ToString(Verdict verdict);

// One headline figure of a probe result; each probe module knows its own
// (ProbeModule::figures).
struct Figure {
  std::string name;       // metric label, base units: "low_load_median_seconds"
  std::string subject;    // directory or peer; "" for the host
  std::string title;      // "low-load median"
  double value = 0;       // base units (seconds, bytes per second, ratio)
  std::string shown;      // "153 µs", "45.2 MB/s per core"
  std::string threshold;  // "pass ≤ 200 µs, warn ≤ 1000 µs"
  Verdict verdict = Verdict::kInfo;
};

// The reference tools' MB (2^20 bytes) and the microsecond.
inline constexpr double kReferenceMB = 1024.0 * 1024.0;
inline constexpr double kMicro = 1e-6;

// Lower is better: pass up to `pass`, warn up to `warn`, fail above.
Verdict AtMost(double value, double pass, double warn);
// Higher is better: pass from `pass`, warn from `warn`, fail below.
Verdict AtLeast(double value, double pass, double warn);

// Tolerant readers of a result JSON (a field that is missing or of another
// type reads as absent), for figures and reports.
std::optional<double> NumberField(const nlohmann::json& object, const char* key);  // finite numbers only
std::string TextField(const nlohmann::json& object, const char* key);
const nlohmann::json& ArrayField(const nlohmann::json& object, const char* key);

// printf-style rendering of one number ("%.1f MB/s").
std::string FormatNumber(const char* format, double value);

}  // namespace hostperf::probes
