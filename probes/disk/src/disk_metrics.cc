#include "disk_metrics.h"

#include <type_traits>

#include "hostperf/probes/disk/module.h"

namespace hostperf::probes::disk {
namespace {

template <typename T>
void RemoveMetric(prometheus::Family<T>& family, const prometheus::Labels& labels) {
  if (!family.Has(labels)) return;
  if constexpr (std::is_same_v<T, prometheus::Histogram>) {
    family.Remove(&family.Add(labels, LatencyBuckets()));
  } else {
    family.Remove(&family.Add(labels));
  }
}

}  // namespace

DiskMetrics::DiskMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
      latency_(prometheus::BuildHistogram()
                   .Name("hostperf_disk_op_latency_seconds")
                   .Help("Latency of one block read or write of the disk probe, by operation.")
                   .Register(*registry_)),
      read_bytes_(prometheus::BuildCounter()
                      .Name("hostperf_disk_read_bytes_total")
                      .Help("Bytes the disk probe read back and verified.")
                      .Register(*registry_)),
      written_bytes_(prometheus::BuildCounter()
                         .Name("hostperf_disk_written_bytes_total")
                         .Help("Bytes the disk probe wrote.")
                         .Register(*registry_)),
      verify_errors_(prometheus::BuildCounter()
                         .Name("hostperf_disk_verify_errors_total")
                         .Help("Blocks read back with a wrong CRC32C, file, offset or generation.")
                         .Register(*registry_)),
      throughput_(prometheus::BuildGauge()
                      .Name("hostperf_disk_throughput_bytes_per_second")
                      .Help("Bytes per second (read plus written for ReWrite) of the last run of each test.")
                      .Register(*registry_)),
      seeks_(prometheus::BuildGauge()
                 .Name("hostperf_disk_seeks_per_second")
                 .Help("Non-contiguous block reads per second of the last SkipRead test.")
                 .Register(*registry_)),
      directory_info_(prometheus::BuildGauge()
                          .Name("hostperf_disk_directory_info")
                          .Help("Always 1 for each configured directory; role labels its use (configured), "
                                "device_class its storage as the probe reads it from /sys: "
                                "<media>_<transport>_<filesystem>.")
                          .Register(*registry_)),
      directory_success_(prometheus::BuildGauge()
                             .Name("hostperf_disk_directory_success")
                             .Help("1 if the last run of the directory succeeded, else 0 (its throughput and seek "
                                   "figures are then dropped, not left at their last good value).")
                             .Register(*registry_)),
      directory_failures_(prometheus::BuildCounter()
                              .Name("hostperf_disk_directory_failures_total")
                              .Help("Failed runs of the directory, by reason (every failing directory of a run "
                                    "counts, not only the first).")
                              .Register(*registry_)),
      members_(prometheus::BuildGauge()
                   .Name("hostperf_disk_members")
                   .Help("Block devices in the array behind the directory (a multi-device btrfs, or the first "
                         "level of its stack with two or more devices, e.g. md's slaves); 1 for a single device.")
                   .Register(*registry_)),
      member_info_(prometheus::BuildGauge()
                       .Name("hostperf_disk_member_info")
                       .Help("Always 1 for each member device behind the directory: the physical disks below it "
                             "(leaves), their model and serial where sysfs shows them.")
                       .Register(*registry_)),
      member_seconds_per_op_(prometheus::BuildGauge()
                                 .Name("hostperf_disk_member_seconds_per_op")
                                 .Help("Time the member device spent per read or write during the probe's last run "
                                       "of the directory (its /sys/block stat counters around the run; at least 8 "
                                       "operations).")
                                 .Register(*registry_)),
      member_ratio_(prometheus::BuildGauge()
                        .Name("hostperf_disk_member_service_ratio")
                        .Help("The member's time per read or write over the median of its siblings' in the same "
                              "array, during the probe's last run (arrays of two or more members only).")
                        .Register(*registry_)),
      member_bytes_(prometheus::BuildCounter()
                        .Name("hostperf_disk_member_bytes_total")
                        .Help("Bytes each member device read or wrote during the probe's runs of the directory "
                              "(all I/O of the device in those intervals).")
                        .Register(*registry_)) {}

std::uint64_t DiskMetrics::Generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

void DiskMetrics::Reconfigure(std::map<std::string, prometheus::Labels> roles) {
  std::lock_guard lock(mutex_);
  ++generation_;
  // A directory no longer configured loses every series (full-run-only
  // directories too): a removed volume must not leave stale series behind
  // for alerts and dashboards. No reference to a metric outlives mutex_, so
  // Family::Remove is safe here.
  for (auto it = published_.begin(); it != published_.end();) {
    if (roles.contains(*it)) {
      ++it;
    } else {
      RemoveSeries(*it);
      it = published_.erase(it);
    }
  }
  for (const auto& [path, labels] : roles_) {
    if (const auto next = roles.find(path); next == roles.end() || next->second != labels) {
      RemoveMetric(directory_info_, labels);
    }
  }
  roles_ = std::move(roles);
  for (const auto& [path, labels] : roles_) {
    directory_info_.Add(labels).Set(1);
    // The verify error counter is exposed at 0 from start-up (and every
    // reload), before any run: increase() then alerts on a bad block in the
    // very first run (a series first scraped at 1 has no increase).
    verify_errors_.Add({{"directory", path}});
    directory_success_.Add({{"directory", path}});
    // At 0 for every reason from start-up, as hostperf_probe_failures_total:
    // increase() then sees a directory's first failure.
    for (const std::string_view reason : kModule.failure_reasons) {
      directory_failures_.Add({{"directory", path}, {"reason", std::string(reason)}});
      failure_reasons_.emplace(path, std::string(reason));
    }
    published_.insert(path);
  }
}

bool DiskMetrics::Current(std::uint64_t generation, const std::string& path) const {
  return generation == generation_ || roles_.contains(path);
}

void DiskMetrics::RecordDirectory(std::uint64_t generation, const std::string& path, const DirectoryOutcome& outcome) {
  if (outcome.skipped || (outcome.failure && outcome.failure->reason == "cancelled")) return;
  std::lock_guard lock(mutex_);
  if (!Current(generation, path)) return;
  published_.insert(path);
  const prometheus::Labels dir_label = {{"directory", path}};
  directory_success_.Add(dir_label).Set(outcome.failure ? 0 : 1);
  if (!outcome.failure) return;
  RemoveFigures(path);
  directory_failures_.Add({{"directory", path}, {"reason", outcome.failure->reason}}).Increment();
  failure_reasons_.emplace(path, outcome.failure->reason);
}

void DiskMetrics::RecordMembers(std::uint64_t generation, const std::string& path, const DirectoryStack& stack,
                                const std::vector<MemberActivity>& activity) {
  std::lock_guard lock(mutex_);
  if (!Current(generation, path)) return;
  std::set<prometheus::Labels> made;
  const prometheus::Labels dir_label = {{"directory", path}};
  members_.Add(dir_label).Set(static_cast<double>(stack.members.size()));
  made.insert(dir_label);
  for (const auto& member : stack.members) {
    const prometheus::Labels info = {{"directory", path},
                                     {"device", member.device},
                                     {"leaves", member.LeavesText()},
                                     {"model", member.model},
                                     {"serial", member.serial}};
    member_info_.Add(info).Set(1);
    made.insert(info);
  }
  for (const auto& done : activity) {
    for (const bool read : {true, false}) {
      const prometheus::Labels labels = {{"directory", path}, {"device", done.device}, {"op", read ? "read" : "write"}};
      made.insert(labels);
      member_bytes_.Add(labels).Increment(static_cast<double>(read ? done.read_bytes : done.write_bytes));
      const auto seconds = read ? done.read_seconds_per_op : done.write_seconds_per_op;
      const auto ratio = read ? done.read_ratio : done.write_ratio;
      // Too few operations this run: no figure rather than a stale one.
      if (seconds) {
        member_seconds_per_op_.Add(labels).Set(*seconds);
      } else {
        RemoveMetric(member_seconds_per_op_, labels);
      }
      if (ratio) {
        member_ratio_.Add(labels).Set(*ratio);
      } else {
        RemoveMetric(member_ratio_, labels);
      }
    }
  }
  RemoveMemberSeries(path, made);
  member_series_[path] = std::move(made);
}

void DiskMetrics::Publish(std::uint64_t generation, const std::string& path, DiskTest test,
                          const nlohmann::json& summary, const OpLatencies& latencies, const TestCounters& counters) {
  std::lock_guard lock(mutex_);
  if (!PublishTotalsLocked(generation, path, latencies, counters)) return;
  const prometheus::Labels dir_label = {{"directory", path}};
  auto labels = dir_label;
  labels["test"] = std::string(TestName(test));
  throughput_.Add(labels).Set(summary["throughput_bytes_per_second"].get<double>());
  if (test == DiskTest::kSkipRead) seeks_.Add(dir_label).Set(summary["seeks_per_second"].get<double>());
}

void DiskMetrics::PublishTotals(std::uint64_t generation, const std::string& path, const OpLatencies& latencies,
                                const TestCounters& counters) {
  std::lock_guard lock(mutex_);
  PublishTotalsLocked(generation, path, latencies, counters);
}

bool DiskMetrics::PublishTotalsLocked(std::uint64_t generation, const std::string& path, const OpLatencies& latencies,
                                      const TestCounters& counters) {
  if (!Current(generation, path)) return false;
  published_.insert(path);
  const prometheus::Labels dir_label = {{"directory", path}};
  for (std::size_t op = 0; op < kOpCount; ++op) {
    if (latencies[op].Total() == 0) continue;
    auto labels = dir_label;
    labels["op"] = std::string(OpName(static_cast<DiskOp>(op)));
    latency_.Add(labels, LatencyBuckets()).ObserveMultiple(latencies[op].counts, latencies[op].sum);
  }
  read_bytes_.Add(dir_label).Increment(static_cast<double>(counters.bytes_read.load()));
  written_bytes_.Add(dir_label).Increment(static_cast<double>(counters.bytes_written.load()));
  verify_errors_.Add(dir_label).Increment(static_cast<double>(counters.verify_errors.load()));
  return true;
}

void DiskMetrics::RemoveSeries(const std::string& path) {
  const prometheus::Labels dir_label = {{"directory", path}};
  for (std::size_t op = 0; op < kOpCount; ++op) {
    auto labels = dir_label;
    labels["op"] = std::string(OpName(static_cast<DiskOp>(op)));
    RemoveMetric(latency_, labels);
  }
  RemoveFigures(path);
  RemoveMetric(directory_success_, dir_label);
  for (auto it = failure_reasons_.begin(); it != failure_reasons_.end();) {
    if (it->first == path) {
      RemoveMetric(directory_failures_, {{"directory", path}, {"reason", it->second}});
      it = failure_reasons_.erase(it);
    } else {
      ++it;
    }
  }
  RemoveMetric(read_bytes_, dir_label);
  RemoveMetric(written_bytes_, dir_label);
  RemoveMetric(verify_errors_, dir_label);
  RemoveMemberSeries(path, {});
}

void DiskMetrics::RemoveMemberSeries(const std::string& path, const std::set<prometheus::Labels>& keep) {
  auto& made = member_series_[path];
  for (auto it = made.begin(); it != made.end();) {
    if (keep.contains(*it)) {
      ++it;
      continue;
    }
    // Each label set belongs to one family: the kinds differ in their keys.
    if (it->contains("leaves")) {
      RemoveMetric(member_info_, *it);
    } else if (it->contains("device") && it->contains("op")) {
      RemoveMetric(member_seconds_per_op_, *it);
      RemoveMetric(member_ratio_, *it);
      RemoveMetric(member_bytes_, *it);
    } else {
      RemoveMetric(members_, *it);
    }
    it = made.erase(it);
  }
  if (made.empty()) member_series_.erase(path);
}

void DiskMetrics::RemoveFigures(const std::string& path) {
  const prometheus::Labels dir_label = {{"directory", path}};
  for (const DiskTest test : kAllTests) {
    auto labels = dir_label;
    labels["test"] = std::string(TestName(test));
    RemoveMetric(throughput_, labels);
  }
  RemoveMetric(seeks_, dir_label);
}

}  // namespace hostperf::probes::disk
