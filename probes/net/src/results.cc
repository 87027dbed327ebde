#include "hostperf/probes/net/results.h"

#include <cstdio>
#include <ctime>

#include "hostperf/probes/figures.h"

namespace hostperf::probes::net {

std::vector<ThroughputRow> ReadTcpThroughputRows(const nlohmann::json& result) {
  std::vector<ThroughputRow> rows;
  static const nlohmann::json kNone;
  const nlohmann::json* tests = &kNone;
  if (result.is_object()) {
    if (const auto it = result.find("tests"); it != result.end()) tests = &*it;
  }
  for (const nlohmann::json& row : ArrayField(*tests, "tcp-throughput")) {
    rows.push_back({TextField(row, "node"), TextField(row, "outcome"), TextField(row, "error"),
                    NumberField(row, "bytes_received"), NumberField(row, "duration_seconds"),
                    NumberField(row, "mb_per_second_received")});
  }
  return rows;
}

std::string VnetperfTimestamp(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d_%H:%M:%S", &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
  char millis[8];
  std::snprintf(millis, sizeof(millis), ",%03d", static_cast<int>(ms));
  return std::string(text) + millis;
}

}  // namespace hostperf::probes::net
