#pragma once

// What both faces write in their results' rows. Internal to the net probe.

#include <nlohmann/json.hpp>
#include <string>

#include "hostperf/probes/net/client.h"

namespace hostperf::probes::net {

// vnetperf's MB: 2^20 bytes.
inline constexpr double kMiB = 1024.0 * 1024.0;

// vnetperf's date column, now.
std::string VnetperfDate();

// One pair session's throughput row ("tcp-throughput" or "udp-throughput")
// at `rate` MB/s: vnetperf's columns, plus loss and jitter for UDP.
nlohmann::json PairThroughputRow(const std::string& date, const std::string& test, double rate, const std::string& node,
                                 const ThroughputResult& r);

}  // namespace hostperf::probes::net
