#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <sstream>
#include <string>

#include "hostperf/base/files.h"
#include "hostperf/daemon/collectors.h"

namespace hostperf::daemon {
namespace {

// Non-throwing: a malformed file must cost its metric, not the scrape.
std::optional<double> ToDouble(std::string_view text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> BootTimeSeconds(const probes::SystemRoots& roots) {
  const auto stat = ReadFile(roots.proc / "stat");
  if (!stat) return std::nullopt;
  std::istringstream lines(*stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("btime ", 0) == 0) return ToDouble(std::string_view(line).substr(6));
  }
  return std::nullopt;
}

std::optional<double> MaxOpenFiles(const probes::SystemRoots& roots) {
  const auto limits = ReadFile(roots.proc / "self" / "limits");
  if (!limits) return std::nullopt;
  std::istringstream lines(*limits);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(14));
    std::string soft;
    fields >> soft;
    if (soft == "unlimited") return std::nullopt;
    return ToDouble(soft);
  }
  return std::nullopt;
}

}  // namespace

prometheus::MetricFamily GaugeFamily(std::string name, std::string help, double value,
                                     std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return {std::move(name), std::move(help), prometheus::MetricType::Gauge, {metric}};
}

prometheus::MetricFamily CounterFamily(std::string name, std::string help, double value) {
  prometheus::ClientMetric metric;
  metric.counter.value = value;
  return {std::move(name), std::move(help), prometheus::MetricType::Counter, {metric}};
}

ProcessCollector::ProcessCollector(probes::SystemRoots roots)
    : roots_(std::move(roots)), ticks_per_second_(sysconf(_SC_CLK_TCK)), page_size_(sysconf(_SC_PAGESIZE)) {}

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> families;
  const auto self = roots_.proc / "self";
  if (const auto stat = ReadFile(self / "stat")) {
    // Fields after the parenthesised command name, which may contain spaces.
    const auto close = stat->rfind(')');
    std::vector<std::string> f;
    if (close != std::string::npos && close + 2 <= stat->size()) {
      std::istringstream fields(stat->substr(close + 2));
      for (std::string field; fields >> field;) f.push_back(field);
    }
    // f[0] is field 3 (state); utime=14, stime=15, starttime=22, vsize=23, rss=24.
    auto field = [&f](std::size_t i) { return i < f.size() ? ToDouble(f[i]) : std::nullopt; };
    const double tps = static_cast<double>(ticks_per_second_);
    if (const auto utime = field(11), stime = field(12); utime && stime) {
      families.push_back(CounterFamily("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                                       (*utime + *stime) / tps));
    }
    if (const auto vsize = field(20)) {
      families.push_back(GaugeFamily("process_virtual_memory_bytes", "Virtual memory size in bytes.", *vsize));
    }
    if (const auto rss = field(21)) {
      families.push_back(GaugeFamily("process_resident_memory_bytes", "Resident memory size in bytes.",
                                     *rss * static_cast<double>(page_size_)));
    }
    const auto start = field(19);
    const auto boot = BootTimeSeconds(roots_);
    if (start && boot) {
      families.push_back(GaugeFamily("process_start_time_seconds",
                                     "Start time of the process since unix epoch in seconds.", *boot + *start / tps));
    }
  }
  std::error_code ec;
  std::size_t fds = 0;
  for (std::filesystem::directory_iterator it(self / "fd", ec), end; !ec && it != end; it.increment(ec)) ++fds;
  if (!ec)
    families.push_back(GaugeFamily("process_open_fds", "Number of open file descriptors.", static_cast<double>(fds)));
  if (const auto max_fds = MaxOpenFiles(roots_)) {
    families.push_back(GaugeFamily("process_max_fds", "Maximum number of open file descriptors.", *max_fds));
  }
  return families;
}

}  // namespace hostperf::daemon
