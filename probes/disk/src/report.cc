#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <fstream>
#include <string>

#include "hostperf/probes/disk/disk_probe.h"
#include "tagged.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;

// Whole numbers print without decimals, others with up to one (vioperf's
// 329.5 per core).
std::string Number(double value) {
  const double rounded = std::round(value * 10) / 10;
  if (rounded == std::floor(rounded)) return fmt::format("{:.0f}", rounded);
  return fmt::format("{:.1f}", rounded);
}

// "420" or, for ReWrite, "150+150".
std::string Values(const json& values) {
  std::string out;
  for (const auto& value : values) {
    if (!out.empty()) out += "+";
    out += Number(value.get<double>());
  }
  return out;
}

constexpr const char* kRowFormat =
    "{:<8} | {:<13} | {:<20} | {:<13} | {:<26} | {:<19} | {:<31} | {:<13} | {:<5} | {:<9} | {:<16} | {}\n";

}  // namespace

std::string FormatVioperfBanner(int physical_cores) {
  return fmt::format(
      "The minimum required I/O is 20 MB/s read and write per physical processor core on each node, in full duplex\n"
      "i.e. reading and writing at this rate simultaneously, concurrently on all nodes of the cluster.\n"
      "The recommended I/O is 40 MB/s per physical core on each node.\n"
      "For this host's {} physical cores that is {} MB/s required minimum, {} MB/s recommended.\n\n",
      physical_cores, 20 * physical_cores, 40 * physical_cores);
}

std::string FormatDirectoryLine(const json& directory) {
  if (directory.value("hdfs", false)) {
    return fmt::format("Reading HDFS directory \"{}\" through WebHDFS at {} ({} files, {:.0f} MB, buffer size={})\n",
                       directory.value("directory", ""), directory.value("namenode", ""), directory.value("files", 0),
                       directory.value("file_bytes", 0.0) / (1024.0 * 1024.0), directory.value("buffer_size", 0));
  }
  const bool direct = directory.value("direct_io", false);
  return fmt::format("Using {} (buffer size={}, alignment={}) for directory \"{}\"\n",
                     direct ? "direct io" : "buffered io", directory.value("buffer_size", 0),
                     directory.value("alignment", 0), directory.value("directory", ""));
}

std::string FormatArrayReport(const json& report) {
  const json& members = report.contains("members") && report["members"].is_array() ? report["members"] : json::array();
  std::string out = fmt::format("\nBlock devices behind \"{}\" ({}, {} member{}):\n", report.value("directory", ""),
                                report.value("stack", ""), members.size(), members.size() == 1 ? "" : "s");
  const auto per_op = [](const json& member, const char* key) {
    return member.contains(key) ? fmt::format("{:.2f} ms", member[key].get<double>() * 1000) : std::string("-");
  };
  for (const json& member : members) {
    const std::string leaves = member.value("leaves", "");
    std::string identity = member.value("model", "");
    if (member.contains("serial")) identity += (identity.empty() ? "serial " : " serial ") + member.value("serial", "");
    out += fmt::format("  {:<12} disk {:<16} read {:>10}/op  write {:>10}/op{}{}\n", member.value("device", ""), leaves,
                       per_op(member, "read_seconds_per_op"), per_op(member, "write_seconds_per_op"),
                       identity.empty() ? "" : "  ", identity);
  }
  for (const auto& finding : report.value("slow_members", json::array())) {
    out += "  " + finding.get<std::string>() + "\n";
  }
  return out;
}

std::string FormatTableHeader() {
  std::string header =
      fmt::format(fmt::runtime(kRowFormat), "test", "directory", "counter name", "counter value",
                  "counter value (10 sec avg)", "counter value/core", "counter value/core (10 sec avg)", "thread count",
                  "%CPU", "%IO Wait", "elapsed time (s)", "remaining time (s)");
  return header + std::string(header.size() - 1, '-') + "\n";
}

std::string FormatTableRow(const json& row) {
  return fmt::format(
      fmt::runtime(kRowFormat), row.value("test", ""), row.value("directory", ""), row.value("counter_name", ""),
      Values(row.value("value", json::array())), Values(row.value("average", json::array())),
      Values(row.value("value_per_core", json::array())), Values(row.value("average_per_core", json::array())),
      row.value("thread_count", 0), Number(row.value("cpu_percent", 0.0)), Number(row.value("iowait_percent", 0.0)),
      Number(std::floor(row.value("elapsed_seconds", 0.0))), Number(std::ceil(row.value("remaining_seconds", 0.0))));
}

std::string FormatVioperfReport(const json& result) {
  std::string out = FormatVioperfBanner(result.value("physical_cores", 0));
  for (const auto& directory : result.value("directories", json::array())) {
    if (directory.contains("buffer_size")) out += FormatDirectoryLine(directory);
  }
  out += "\n" + FormatTableHeader();
  for (const auto& row : result.value("rows", json::array())) out += FormatTableRow(row);
  return out;
}

std::string DefaultLogFileName() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return std::string("results") + stamp + ".json";
}

std::string FormatJsonLog(const json& result, const std::string& reason, const std::string& message, bool condensed) {
  json run = {{"physical_cores", result.value("physical_cores", 0)},
              {"thread_count", result.value("thread_count", 0)},
              {"minimum_mb_per_second", 20 * result.value("physical_cores", 0)},
              {"recommended_mb_per_second", 40 * result.value("physical_cores", 0)},
              {"directories", result.value("directories", json::array())}};
  json summary = {{"status", reason.empty() ? "ok" : "failed"}, {"seconds", result.value("seconds", 0.0)}};
  if (!reason.empty()) summary.update({{"reason", reason}, {"message", message}});
  if (!condensed) {
    json document = run;
    document["rows"] = result.value("rows", json::array());
    document.update(summary);
    return document.dump(2) + "\n";
  }
  std::string out = Tagged("run", run).dump() + "\n";
  for (const auto& row : result.value("rows", json::array())) out += Tagged("row", row).dump() + "\n";
  return out + Tagged("summary", summary).dump() + "\n";
}

Result<void> WriteJsonLog(const std::string& path, const json& result, const std::string& reason,
                          const std::string& message, bool condensed) {
  std::ofstream out(path, std::ios::trunc);
  if (out) out << FormatJsonLog(result, reason, message, condensed);
  out.close();
  if (!out) return Result<void>::Error("cannot write the log file \"" + path + "\"");
  return {};
}

}  // namespace hostperf::probes::disk
