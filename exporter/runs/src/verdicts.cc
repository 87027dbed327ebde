#include "hostperf/runs/verdicts.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

namespace hostperf::exporter {
namespace {

using nlohmann::json;

constexpr double kMB = 1024.0 * 1024.0;  // the reference tools' MB
constexpr double kMicro = 1e-6;

std::optional<double> Number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::string Text(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Array(const json& object, const char* key) {
  static const json kEmpty = json::array();
  if (!object.is_object()) return kEmpty;
  const auto it = object.find(key);
  return it != object.end() && it->is_array() ? *it : kEmpty;
}

std::string Format(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, value);
  return buffer;
}

// Lower is better: pass up to `pass`, warn up to `warn`, fail above.
Verdict AtMost(double value, double pass, double warn) {
  if (value <= pass) return Verdict::kPass;
  return value <= warn ? Verdict::kWarn : Verdict::kFail;
}

// Higher is better: pass from `pass`, warn from `warn`, fail below.
Verdict AtLeast(double value, double pass, double warn) {
  if (value >= pass) return Verdict::kPass;
  return value >= warn ? Verdict::kWarn : Verdict::kFail;
}

Figure Rtt(std::string subject, double seconds) {
  return {"rtt_seconds",
          std::move(subject),
          "RTT",
          seconds,
          Format("%.0f µs", seconds / kMicro),
          "pass ≤ 200 µs, warn ≤ 1000 µs",
          AtMost(seconds, 200e-6, 1000e-6)};
}

Figure ClockOffset(std::string subject, double seconds) {
  return {"clock_offset_seconds",
          std::move(subject),
          "clock skew",
          seconds,
          Format("%.6f s", seconds),
          "pass < 1 s",
          std::abs(seconds) < 1 ? Verdict::kPass : Verdict::kFail};
}

// `capped_mb`: the rate limit the figure was measured under (0: none).
Figure TcpThroughput(std::string subject, double mb_per_second, double capped_mb) {
  Figure figure{"tcp_throughput_bytes_per_second",
                std::move(subject),
                "TCP throughput",
                mb_per_second * kMB,
                Format("%.1f MB/s", mb_per_second),
                "pass ≥ 800 MB/s, warn ≥ 100 MB/s",
                AtLeast(mb_per_second, 800, 100)};
  if (capped_mb > 0 && capped_mb < 800) {
    figure.threshold = "rate-capped at " + Format("%.0f", capped_mb) + " MB/s: thresholds need a full run";
    figure.verdict = Verdict::kInfo;
  }
  return figure;
}

void CpuFigures(const json& result, std::vector<Figure>& out) {
  if (const auto low = Number(result, "low_load_median_seconds")) {
    out.push_back({"low_load_median_seconds", "", "low-load median", *low, Format("%.0f µs", *low / kMicro),
                   "pass ≤ 200 µs, warn ≤ 1000 µs", AtMost(*low, 200e-6, 1000e-6)});
  }
  if (const auto ratio = Number(result, "throttle_ratio")) {
    out.push_back({"throttle_ratio", "", "low/high load ratio", *ratio, Format("%.2f", *ratio), "pass ≤ 2",
                   *ratio <= 2 ? Verdict::kPass : Verdict::kFail});
  }
  if (const auto baseline = Number(result, "baseline_ratio")) {
    out.push_back({"baseline_ratio", "", "CPU time / baseline", *baseline, Format("%.3f", *baseline),
                   "trend within one binary", Verdict::kInfo});
  }
}

void DiskFigures(const json& result, std::vector<Figure>& out) {
  const double cores = std::max(1.0, Number(result, "physical_cores").value_or(1));
  for (const json& directory : Array(result, "directories")) {
    const std::string path = Text(directory, "directory");
    for (const json& test : Array(directory, "tests")) {
      const std::string name = Text(test, "test");
      if (name != "Write" && name != "Read") continue;  // ReWrite and SkipRead do not count
      const auto rate = Number(test, "throughput_bytes_per_second");
      if (!rate) continue;
      const double per_core = *rate / cores;
      out.push_back({name == "Write" ? "write_bytes_per_second_per_core" : "read_bytes_per_second_per_core", path,
                     name + " per physical core", per_core, Format("%.1f MB/s", per_core / kMB),
                     "pass ≥ 40 MB/s, warn ≥ 20 MB/s", AtLeast(per_core / kMB, 40, 20)});
    }
  }
}

void NetFigures(const json& result, std::vector<Figure>& out) {
  // Scheduled: one entry per peer and one throughput burst.
  for (const json& peer : Array(result, "peers")) {
    if (!peer.is_object() || !peer.contains("up") || peer["up"] != true) continue;
    const std::string name = Text(peer, "peer");
    if (const auto rtt = Number(peer, "rtt_median_seconds")) out.push_back(Rtt(name, *rtt));
    if (const auto offset = Number(peer, "clock_offset_seconds")) out.push_back(ClockOffset(name, *offset));
  }
  if (const auto it = result.find("throughput"); it != result.end() && Text(*it, "test") == "tcp-throughput") {
    if (const auto rate = Number(*it, "mb_per_second_received")) {
      out.push_back(TcpThroughput(Text(*it, "node"), *rate, Number(*it, "rate_limit_mb_per_second").value_or(0)));
    }
  }
  // Full: vnetperf's tables.
  const json tests = result.is_object() ? result.value("tests", json::object()) : json::object();
  for (const json& row : Array(tests, "latency")) {
    const std::string node = Text(row, "node");
    if (const auto rtt = Number(row, "rtt_latency_us")) out.push_back(Rtt(node, *rtt * kMicro));
    if (const auto skew = Number(row, "clock_skew_us")) out.push_back(ClockOffset(node, *skew * kMicro));
  }
  std::map<std::string, double> best;  // per node, over the rate ladder
  for (const json& row : Array(tests, "tcp-throughput")) {
    const std::string node = Text(row, "node");
    const auto rate = Number(row, "mb_per_second_received");
    if (node.empty() || node == "average" || !rate) continue;
    best[node] = std::max(best[node], *rate);
  }
  for (const auto& [node, rate] : best) out.push_back(TcpThroughput(node, rate, 0));
}

void MemoryFigures(const json& result, std::vector<Figure>& out) {
  for (const json& kernel : Array(result, "kernels")) {
    if (Text(kernel, "kernel") != "triad") continue;
    if (const auto rate = Number(kernel, "best_bytes_per_second")) {
      out.push_back({"triad_bytes_per_second", "", "STREAM triad", *rate, Format("%.0f MB/s", *rate / kMB),
                     "no documented threshold", Verdict::kInfo});
    }
  }
}

}  // namespace

std::string_view ToString(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
    case Verdict::kInfo:
      break;
  }
  return "info";
}

std::vector<Figure> HeadlineFigures(std::string_view probe, const json& result) {
  std::vector<Figure> figures;
  if (!result.is_object()) return figures;
  if (probe == "cpu") CpuFigures(result, figures);
  if (probe == "disk") DiskFigures(result, figures);
  if (probe == "net") NetFigures(result, figures);
  if (probe == "memory") MemoryFigures(result, figures);
  return figures;
}

}  // namespace hostperf::exporter
