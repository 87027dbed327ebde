#include "hostperf/probes/figures.h"

#include <cmath>
#include <cstdio>

namespace hostperf::probes {

using nlohmann::json;

std::string_view ToString(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInfo:
      break;
  }
  return "info";
}

Verdict AtMost(double value, double pass, double warn) {
  if (value <= pass) return Verdict::kPass;
  return value <= warn ? Verdict::kWarn : Verdict::kFail;
}

Verdict AtLeast(double value, double pass, double warn) {
  if (value >= pass) return Verdict::kPass;
  return value >= warn ? Verdict::kWarn : Verdict::kFail;
}

std::optional<double> NumberField(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::string TextField(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& ArrayField(const json& object, const char* key) {
  static const json kEmpty = json::array();
  if (!object.is_object()) return kEmpty;
  const auto it = object.find(key);
  return it != object.end() && it->is_array() ? *it : kEmpty;
}

std::string FormatNumber(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

}  // namespace hostperf::probes
