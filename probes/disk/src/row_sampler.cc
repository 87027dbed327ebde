#include "row_sampler.h"

#include <algorithm>
#include <utility>

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

constexpr double kMB = 1024.0 * 1024.0;  // vioperf's MB: buffer sizes are powers of 1024
constexpr auto kInstantWindow = std::chrono::seconds(1);

CounterSnapshot Snapshot(const TestCounters& counters, Clock::time_point at) {
  return {at, counters.bytes_read.load(), counters.bytes_written.load(), counters.ops.load()};
}

json PerCore(const std::vector<double>& values, int cores) {
  json out = json::array();
  for (const double v : values) out.push_back(v / std::max(cores, 1));
  return out;
}

}  // namespace

std::vector<double> Rates(DiskTest test, const CounterSnapshot& from, const CounterSnapshot& to) {
  const double seconds = Seconds(to.at - from.at).count();
  if (seconds <= 0) return test == DiskTest::kReWrite ? std::vector<double>{0, 0} : std::vector<double>{0};
  const auto rate = [&](std::uint64_t a, std::uint64_t b, double unit) {
    return static_cast<double>(b - a) / unit / seconds;
  };
  switch (test) {
    case DiskTest::kWrite:
      return {rate(from.bytes_written, to.bytes_written, kMB)};
    case DiskTest::kReWrite:
      return {rate(from.bytes_read, to.bytes_read, kMB), rate(from.bytes_written, to.bytes_written, kMB)};
    case DiskTest::kRead:
      return {rate(from.bytes_read, to.bytes_read, kMB)};
    case DiskTest::kSkipRead:
      return {rate(from.ops, to.ops, 1)};
  }
  return {0};
}

std::string_view CounterName(DiskTest test) {
  switch (test) {
    case DiskTest::kReWrite:
      return "(MB-read+MB-write)/s";
    case DiskTest::kSkipRead:
      return "seeks/s";
    default:
      return "MB/s";
  }
}

RowSampler::RowSampler(DiskTest test, std::string directory, std::size_t threads, int cores, const SystemRoots& roots,
                       const TestCounters& counters, Clock::time_point slice_end)
    : test_(test),
      directory_(std::move(directory)),
      threads_(threads),
      cores_(cores),
      roots_(roots),
      counters_(counters),
      slice_end_(slice_end),
      start_(Snapshot(counters, Clock::now())),
      last_row_(start_),
      last_cpu_(ReadCpuTimes(roots)) {
  recent_.push_back(start_);
}

void RowSampler::Sample() {
  const auto now = Snapshot(counters_, Clock::now());
  recent_.push_back(now);
  while (recent_.size() > 2 && now.at - recent_[1].at >= kInstantWindow) recent_.pop_front();
}

json RowSampler::Row() {
  const auto now = Snapshot(counters_, Clock::now());
  // "Counter value": the rate over about the last second.
  const CounterSnapshot& window = recent_.empty() ? last_row_ : recent_.front();
  const auto instant = Rates(test_, window, now);
  const auto average = Rates(test_, last_row_, now);
  double cpu = 0;
  double iowait = 0;
  const auto times = ReadCpuTimes(roots_);
  if (times && last_cpu_) {
    const double total = times->Total() - last_cpu_->Total();
    if (total > 0) {
      const double idle = times->idle - last_cpu_->idle;
      const double wait = times->iowait - last_cpu_->iowait;
      cpu = 100.0 * std::max(0.0, total - idle - wait) / total;
      iowait = 100.0 * std::max(0.0, wait) / total;
    }
  }
  json row = {
      {"test", TestName(test_)},
      {"directory", directory_},
      {"counter_name", CounterName(test_)},
      {"value", instant},
      {"average", average},
      {"value_per_core", PerCore(instant, cores_)},
      {"average_per_core", PerCore(average, cores_)},
      {"thread_count", threads_},
      {"cpu_percent", cpu},
      {"iowait_percent", iowait},
      {"elapsed_seconds", Seconds(now.at - start_.at).count()},
      {"remaining_seconds", std::max(0.0, Seconds(slice_end_ - now.at).count())},
  };
  last_row_ = now;
  if (times) last_cpu_ = times;
  recent_.clear();
  recent_.push_back(now);
  return row;
}

Clock::duration RowSampler::SinceLastRow() const { return Clock::now() - last_row_.at; }

json RowSampler::Summary() const {
  const auto now = Snapshot(counters_, Clock::now());
  const double seconds = Seconds(now.at - start_.at).count();
  const std::uint64_t read = now.bytes_read - start_.bytes_read;
  const std::uint64_t written = now.bytes_written - start_.bytes_written;
  const std::uint64_t ops = now.ops - start_.ops;
  const auto per_second = [&](std::uint64_t n) { return seconds > 0 ? static_cast<double>(n) / seconds : 0.0; };
  json summary = {
      {"test", TestName(test_)},
      {"seconds", seconds},
      {"bytes_read", read},
      {"bytes_written", written},
      {"ops", ops},
      {"throughput_bytes_per_second", per_second(read + written)},
      {"counter_name", CounterName(test_)},
      {"value", Rates(test_, start_, now)},
  };
  if (test_ == DiskTest::kSkipRead) summary["seeks_per_second"] = per_second(ops);
  return summary;
}

}  // namespace hostperf::probes::disk
