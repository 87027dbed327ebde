#include "vnetperf_rows.h"

#include <fmt/format.h>

#include <algorithm>

#include "burst_attribution.h"
#include "hostperf/probes/stats.h"
#include "result_rows.h"

namespace hostperf::probes::net {

using nlohmann::json;

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

json PlanRow(const std::string& date, const std::string& test, double rate, const AllToAllHostResult& r) {
  const PlanReport& p = r.report;
  json row = {{"date", date},
              {"test", test},
              {"rate_limit_mb_per_second", rate},
              {"node", r.name},
              {"mode", "all-to-all"},
              {"mb_per_second_sent", r.SentBytesPerSecond() / kMiB},
              {"mb_per_second_received", r.ReceivedBytesPerSecond() / kMiB},
              {"bytes_sent", p.bytes_sent},
              {"bytes_received", p.bytes_received},
              {"duration_seconds", r.SentSeconds()},
              {"sessions_ok", p.sessions_ok},
              {"sessions_failed", p.sessions_failed},
              {"peers_received", p.peers_received},
              {"rounds", r.rounds},
              {"outcome", r.ok ? (p.sessions_failed == 0 ? "ok" : "partial") : "failed"}};
  if (test == "udp-throughput") {
    row["packets_sent"] = p.packets_sent;
    row["packets_received"] = p.packets_received;
    row["loss_ratio"] = r.LossRatio();
    row["jitter_seconds"] = p.jitter_ns / 1e9;
  }
  if (!r.error.empty()) row["error"] = r.error;
  return row;
}

std::vector<std::string> PlanShortfalls(std::span<const AllToAllHostResult> results, const std::string& test,
                                        double rate) {
  std::vector<std::string> findings;
  std::vector<double> moved;  // per host that reported: the lower of sent and received
  for (const auto& r : results) {
    if (!r.ok) {
      findings.push_back(fmt::format("{}: {} failed among all hosts: {}", r.name, test, r.error));
    } else if (r.report.sessions_failed > 0) {
      findings.push_back(fmt::format("{}: {} of its {} sessions to other hosts failed", r.name,
                                     r.report.sessions_failed, r.report.sessions_ok + r.report.sessions_failed));
    } else if (test == "udp-throughput" && r.report.packets_lost > 0) {
      findings.push_back(
          fmt::format("{}: UDP loss {:.1f}% among all hosts at {} MB/s", r.name, r.LossRatio() * 100, rate));
    }
    if (r.ok) moved.push_back(std::min(r.SentBytesPerSecond(), r.ReceivedBytesPerSecond()));
  }
  const double expected = rate * kMiB;
  if (moved.empty() || expected <= 0 || test != "tcp-throughput") return findings;
  // A host that stands out from the others is named first: it also drags the
  // others' figures down by its share, which is not theirs to answer for.
  const double median = Median(moved);
  bool named = false;
  for (const auto& r : results) {
    if (!r.ok) continue;
    const double sent = r.SentBytesPerSecond(), received = r.ReceivedBytesPerSecond();
    if (std::min(sent, received) >= kShortfallRatio * std::min(median, expected)) continue;
    named = true;
    findings.push_back(
        fmt::format("{}: sent {:.1f} MB/s and received {:.1f} MB/s among all hosts at {} MB/s, the "
                    "others a median {:.1f} MB/s: its link, its switch port or the host",
                    r.name, sent / kMiB, received / kMiB, rate, median / kMiB));
  }
  if (!named && median < kShortfallRatio * expected) {
    findings.push_back(
        fmt::format("{} of {} hosts moved less than {:.0f}% of {} MB/s among all hosts (median {:.1f} "
                    "MB/s): the network they share (switch, uplinks) or the hosts' CPUs",
                    std::count_if(moved.begin(), moved.end(), [&](double m) { return m < kShortfallRatio * expected; }),
                    moved.size(), kShortfallRatio * 100, rate, median / kMiB));
  }
  return findings;
}

json AverageRow(const json& rows, const std::string& date, const std::string& test, double rate) {
  double sent = 0, received = 0, bytes_sent = 0, bytes_received = 0, duration = 0;
  for (const json& row : rows) {
    sent += row["mb_per_second_sent"].get<double>();
    received += row["mb_per_second_received"].get<double>();
    bytes_sent += row["bytes_sent"].get<double>();
    bytes_received += row["bytes_received"].get<double>();
    duration += row["duration_seconds"].get<double>();
  }
  const double n = std::max<double>(1, static_cast<double>(rows.size()));
  return {{"date", date},
          {"test", test},
          {"rate_limit_mb_per_second", rate},
          {"node", "average"},
          {"mb_per_second_sent", sent / n},
          {"mb_per_second_received", received / n},
          {"bytes_sent", static_cast<std::uint64_t>(bytes_sent / n)},
          {"bytes_received", static_cast<std::uint64_t>(bytes_received / n)},
          {"duration_seconds", duration / n}};
}

}  // namespace hostperf::probes::net
