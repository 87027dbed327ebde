#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hostperf::probes::net {

// Typed readers of a net full run's result JSON, so that code outside this
// folder (hostperf check) does not depend on its keys. Tolerant: a missing or
// mistyped field reads as absent.

// One row of result["tests"]["tcp-throughput"]: one peer (or "average").
struct ThroughputRow {
  std::string node;     // the peer as the run named it ("host:port")
  std::string outcome;  // "ok", "busy", ...; empty on the average row
  std::string error;    // why the session failed, when it did
  std::optional<double> bytes_received;
  std::optional<double> duration_seconds;
  std::optional<double> mb_per_second_received;  // MiB/s
};
std::vector<ThroughputRow> ReadTcpThroughputRows(const nlohmann::json& result);

// vnetperf's timestamp, in local time to the millisecond: its date column,
// the result's "date" and the default results file's name
// ("2022-03-29_10:23:55,739").
std::string VnetperfTimestamp(std::chrono::system_clock::time_point when);

}  // namespace hostperf::probes::net
