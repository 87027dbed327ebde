#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace hostperf::probes::disk {

// `object` with "kind" set: progress details and condensed log lines.
inline nlohmann::json Tagged(std::string_view kind, const nlohmann::json& object) {
  nlohmann::json tagged = object;
  tagged["kind"] = kind;
  return tagged;
}

}  // namespace hostperf::probes::disk
