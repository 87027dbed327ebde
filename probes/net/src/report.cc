// vnetperf's report: recommendation banners and pipe-separated tables.
#include <fmt/format.h>

#include <string>

#include "hostperf/probes/net/net_probe.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;

constexpr const char* kLatencyBanner =
    "The maximum recommended rtt latency is 1000 microseconds (1 millisecond). The ideal rtt latency is 200 "
    "microseconds or less. It is recommended that clock skew be kept to under 1 second.\n";
constexpr const char* kThroughputBanner =
    "The minimum recommended throughput is 100 MB/s. Ideal throughput is 800 MB/s or more. Note: UDP numbers may be "
    "lower, multiple network switches may reduce performance results.\n";

// vnetperf prints up to six significant digits ("30.5791", "1.00151").
std::string Number(double value) { return fmt::format("{:.6g}", value); }

std::string Int(const json& value) {
  return value.is_number() ? fmt::format("{}", static_cast<long long>(value.get<double>())) : std::string("-");
}

// The table an entry kind belongs to (TCP and UDP rows share one), and its
// banner and header.
std::string TableOf(const std::string& kind) {
  if (kind == "tcp-throughput" || kind == "udp-throughput") return "throughput";
  return kind;
}

std::string TableHead(const std::string& table) {
  if (table == "latency") {
    return std::string(kLatencyBanner) +
           fmt::format("{:<17} | {:<23} | {:<16} | {:<5} | {:<17} | {}\n", "test", "date", "node", "index",
                       "rtt latency (us)", "clock skew (us)") +
           std::string(121, '-') + "\n";
  }
  if (table == "throughput") {
    return std::string(kThroughputBanner) +
           fmt::format("{:<23} | {:<17} | {:<17} | {:<16} | {:<11} | {:<11} | {:<19} | {:<19} | {}\n", "date", "test",
                       "rate limit (MB/s)", "node", "MB/s (sent)", "MB/s (rec)", "bytes (sent)", "bytes (rec)",
                       "duration (s)") +
           std::string(178, '-') + "\n";
  }
  if (table == "connections") {
    return fmt::format("{:<17} | {:<23} | {:<16} | {:<21} | {}\n", "test", "date", "node", "connections accepted",
                       "maximum tried") +
           std::string(100, '-') + "\n";
  }
  return "";
}

std::string TableRow(const std::string& table, const json& row) {
  if (table == "latency") {
    return fmt::format("{:<17} | {:<23} | {:<16} | {:<5} | {:<17} | {}\n", "latency", row.value("date", ""),
                       row.value("node", ""), Int(row["index"]), Int(row["rtt_latency_us"]), Int(row["clock_skew_us"]));
  }
  if (table == "throughput") {
    return fmt::format("{:<23} | {:<17} | {:<17} | {:<16} | {:<11} | {:<11} | {:<19} | {:<19} | {}\n",
                       row.value("date", ""), row.value("test", ""), Number(row.value("rate_limit_mb_per_second", 0.0)),
                       row.value("node", ""), Number(row.value("mb_per_second_sent", 0.0)),
                       Number(row.value("mb_per_second_received", 0.0)), Int(row["bytes_sent"]),
                       Int(row["bytes_received"]), Number(row.value("duration_seconds", 0.0)));
  }
  if (table == "connections") {
    return fmt::format("{:<17} | {:<23} | {:<16} | {:<21} | {}\n", "connections", row.value("date", ""),
                       row.value("node", ""), Int(row["accepted"]), Int(row["maximum"]));
  }
  return "";
}

// Which interface serves each host, then what fell short and
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

std::string VnetperfStream::Entry(const json& entry) {
  const std::string kind = entry.value("kind", "");
  std::string out;
  if (kind == "bad_host") {
    out = fmt::format("Host {} is not reachable: {}\n", entry.value("node", ""), entry.value("error", ""));
    bad_hosts_ = true;
    return out;
  }
  const std::string table = TableOf(kind);
  const std::string row = TableRow(table, entry);
  if (row.empty()) return out;  // not a table's kind
  if (table != open_table_) {
    out += Close();
    out += TableHead(table);
    open_table_ = table;
  }
  return out + row;
}

std::string VnetperfStream::Close() {
  std::string out;
  if (bad_hosts_) out += "\n";
  bad_hosts_ = false;
  if (!open_table_.empty()) out += "\n";
  open_table_.clear();
  return out;
}

std::string VnetperfStream::Finish(const json& result) {
  std::string out = Close();
  InterfacesAndFindings(result, &out);
  return out;
}

std::string FormatVnetperfReport(const json& result) {
  VnetperfStream stream;
  std::string out;
  for (const json& bad : result.value("bad_hosts", json::array())) {
    json entry = bad;
    entry["kind"] = "bad_host";
    out += stream.Entry(entry);
  }
  const json& tests = result.contains("tests") ? result["tests"] : json::object();
  for (const char* test : {"latency", "tcp-throughput", "udp-throughput", "connections"}) {
    if (!tests.contains(test)) continue;
    for (const json& row : tests[test]) {
      json entry = row;
      entry["kind"] = test;
      out += stream.Entry(entry);
    }
  }
  return out + stream.Finish(result);
}

}  // namespace hostperf::probes::net
