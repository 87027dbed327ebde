#include "hostperf/probes/net/results.h"

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

}  // namespace hostperf::probes::net
