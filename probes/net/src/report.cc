// vnetperf's report: recommendation banners and pipe-separated tables.
#include <fmt/format.h>

#include <string>

#include "hostperf/probes/net/net_probe.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;

constexpr const char* kLatencyBanner =
    "The maximum recommended rtt latency is 2 milliseconds. The ideal rtt latency is 200 microseconds or less. It is "
    "recommended that clock skew be kept to under 1 second.\n";
constexpr const char* kThroughputBanner =
    "The minimum recommended throughput is 100 MB/s. Ideal throughput is 800 MB/s or more. Note: UDP numbers may be "
    "lower, multiple network switches may reduce performance results.\n";

// vnetperf prints up to six significant digits ("30.5791", "1.00151").
std::string Number(double value) { return fmt::format("{:.6g}", value); }

std::string Int(const json& value) {
  return value.is_number() ? fmt::format("{}", static_cast<long long>(value.get<double>())) : std::string("-");
}

void LatencyTable(const json& rows, std::string* out) {
  *out += kLatencyBanner;
  *out += fmt::format("{:<17} | {:<23} | {:<16} | {:<5} | {:<17} | {}\n", "test", "date", "node", "index",
                      "rtt latency (us)", "clock skew (us)");
  *out += std::string(121, '-') + "\n";
  for (const json& row : rows) {
    *out +=
        fmt::format("{:<17} | {:<23} | {:<16} | {:<5} | {:<17} | {}\n", "latency", row.value("date", ""),
                    row.value("node", ""), Int(row["index"]), Int(row["rtt_latency_us"]), Int(row["clock_skew_us"]));
  }
  *out += "\n";
}

void ThroughputTable(const json& rows, std::string* out) {
  *out += kThroughputBanner;
  *out += fmt::format("{:<23} | {:<17} | {:<17} | {:<16} | {:<11} | {:<11} | {:<19} | {:<19} | {}\n", "date", "test",
                      "rate limit (MB/s)", "node", "MB/s (sent)", "MB/s (rec)", "bytes (sent)", "bytes (rec)",
                      "duration (s)");
  *out += std::string(178, '-') + "\n";
  for (const json& row : rows) {
    *out += fmt::format("{:<23} | {:<17} | {:<17} | {:<16} | {:<11} | {:<11} | {:<19} | {:<19} | {}\n",
                        row.value("date", ""), row.value("test", ""),
                        Number(row.value("rate_limit_mb_per_second", 0.0)), row.value("node", ""),
                        Number(row.value("mb_per_second_sent", 0.0)), Number(row.value("mb_per_second_received", 0.0)),
                        Int(row["bytes_sent"]), Int(row["bytes_received"]), Number(row.value("duration_seconds", 0.0)));
  }
  *out += "\n";
}

void ConnectionsTable(const json& rows, std::string* out) {
  *out += fmt::format("{:<17} | {:<23} | {:<16} | {:<21} | {}\n", "test", "date", "node", "connections accepted",
                      "maximum tried");
  *out += std::string(100, '-') + "\n";
  for (const json& row : rows) {
    *out += fmt::format("{:<17} | {:<23} | {:<16} | {:<21} | {}\n", "connections", row.value("date", ""),
                        row.value("node", ""), Int(row["accepted"]), Int(row["maximum"]));
  }
  *out += "\n";
}

// Which interface serves each host (issue 22), then what fell short and
// where: the result's "findings".
void InterfacesAndFindings(const json& result, std::string* out) {
  const json interfaces = result.value("interfaces", json::array());
  if (!interfaces.empty()) {
    *out += "Interfaces toward the hosts:\n";
    for (const json& row : interfaces) {
      if (!row.contains("interface") || !row["interface"].is_string()) {
        *out += fmt::format("  {}: interface unknown ({})\n", row.value("node", ""), row.value("error", ""));
        continue;
      }
      std::string lower;
      for (const json& device : row.value("lower", json::array())) {
        lower += fmt::format("{}{} member {}", lower.empty() ? "" : ", ", device.value("upper", ""),
                             device.value("interface", ""));
      }
      const auto mtu = [](const json& value) { return value.is_number() ? Int(value) : std::string("unknown"); };
      *out += fmt::format("  {} via {}{}: MTU {} here, {} there{}\n", row.value("node", ""),
                          row["interface"].get<std::string>(), lower.empty() ? "" : " (" + lower + ")",
                          mtu(row.value("mtu_local", json())), mtu(row.value("mtu_remote", json())),
                          row.value("mtu_mismatch", false) ? " (MISMATCH)" : "");
    }
    *out += "\n";
  }
  const json findings = result.value("findings", json::array());
  if (findings.empty()) return;
  *out += "Findings:\n";
  for (const json& finding : findings) {
    if (finding.is_string()) *out += "  " + finding.get<std::string>() + "\n";
  }
  *out += "\n";
}

}  // namespace

std::string FormatVnetperfReport(const json& result) {
  std::string out;
  const json& tests = result.contains("tests") ? result["tests"] : json::object();
  for (const json& bad : result.value("bad_hosts", json::array())) {
    out += fmt::format("Host {} is not reachable: {}\n", bad.value("node", ""), bad.value("error", ""));
  }
  if (!out.empty()) out += "\n";
  if (tests.contains("latency")) LatencyTable(tests["latency"], &out);
  json throughput = json::array();
  for (const char* test : {"tcp-throughput", "udp-throughput"}) {
    if (tests.contains(test)) {
      for (const json& row : tests[test]) throughput.push_back(row);
    }
  }
  if (!throughput.empty()) ThroughputTable(throughput, &out);
  if (tests.contains("connections")) ConnectionsTable(tests["connections"], &out);
  InterfacesAndFindings(result, &out);
  return out;
}

}  // namespace hostperf::probes::net
