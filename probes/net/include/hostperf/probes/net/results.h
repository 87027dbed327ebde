#pragma once

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

}  // namespace hostperf::probes::net
