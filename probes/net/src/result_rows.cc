#include "result_rows.h"

#include <chrono>

#include "hostperf/probes/net/results.h"

namespace hostperf::probes::net {

std::string VnetperfDate() { return VnetperfTimestamp(std::chrono::system_clock::now()); }

nlohmann::json PairThroughputRow(const std::string& date, const std::string& test, double rate, const std::string& node,
                                 const ThroughputResult& r) {
  nlohmann::json row = {{"date", date},
                        {"test", test},
                        {"rate_limit_mb_per_second", rate},
                        {"node", node},
                        {"mb_per_second_sent", r.SentBytesPerSecond() / kMiB},
                        {"mb_per_second_received", r.ReceivedBytesPerSecond() / kMiB},
                        {"bytes_sent", r.bytes_sent},
                        {"bytes_received", r.bytes_received},
                        {"duration_seconds", r.sent_seconds},
                        {"outcome", ToString(r.outcome)}};
  if (test == "udp-throughput") {
    row["loss_ratio"] = r.LossRatio();
    row["jitter_seconds"] = r.jitter_seconds;
  }
  if (!r.error.empty()) row["error"] = r.error;
  return row;
}

}  // namespace hostperf::probes::net
