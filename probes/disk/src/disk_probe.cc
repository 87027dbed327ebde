#include "hostperf/probes/disk/disk_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>

#include "hostperf/config/units.h"
#include "hostperf/probes/disk/block.h"
#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/disk/members.h"
#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/disk/scratch.h"
#include "hostperf/probes/disk/workload.h"
#include "hostperf/probes/host_facts.h"
#include "tagged.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

constexpr double kMB = 1024.0 * 1024.0;  // vioperf's MB: buffer sizes are powers of 1024
constexpr auto kInstantWindow = std::chrono::seconds(1);
constexpr auto kMinFinalRowGap = std::chrono::milliseconds(100);
// vioperf reads HDFS, it does not write it; its files must hold 10 MB.
constexpr std::array<DiskTest, 2> kHdfsTests = {DiskTest::kRead, DiskTest::kSkipRead};
constexpr std::uint64_t kHdfsMinFileSize = 10ULL << 20;

// Everything a run uses, resolved from the config and the full-run options.
struct Plan {
  bool full = false;
  FullRunMethod method = FullRunMethod::kVioperf;
  bool data_size_given = false;
  std::vector<std::string> directories;
  std::size_t threads = 1;
  std::size_t files_per_thread = 1;
  std::uint64_t max_buffer_size = 0;
  std::uint64_t data_size = 0;  // per directory (gpcheckperf: over all of them)
  std::uint64_t reserve = 0;
  bool direct_io = true;
  bool crc = true;
  bool preserve_files = false;
  bool verbose = false;  // --debug
  std::string hdfs_ca_file;
  double member_slow_ratio = 2.0;
  bool attribute_members = true;
  // The configuration generation the run started under (see Publish).
  std::uint64_t generation = 0;
  Clock::duration duration{0};
  Clock::duration log_interval{0};
};

struct CounterSnapshot {
  Clock::time_point at;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t ops = 0;
};

CounterSnapshot Snapshot(const TestCounters& counters, Clock::time_point at) {
  return {at, counters.bytes_read.load(), counters.bytes_written.load(), counters.ops.load()};
}

// The figures of one test between two snapshots: MB/s (Write, Read),
// read+write MB/s (ReWrite) or seeks/s (SkipRead).
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

json PerCore(const std::vector<double>& values, int cores) {
  json out = json::array();
  for (const double v : values) out.push_back(v / std::max(cores, 1));
  return out;
}

std::chrono::nanoseconds ToNanoseconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Seconds(seconds));
}

// Builds vioperf's table rows for one test while it runs.
class RowSampler {
 public:
  RowSampler(DiskTest test, std::string directory, std::size_t threads, int cores, const SystemRoots& roots,
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

  // Called every ~100 ms; records a snapshot for the instant rate.
  void Sample() {
    const auto now = Snapshot(counters_, Clock::now());
    recent_.push_back(now);
    while (recent_.size() > 2 && now.at - recent_[1].at >= kInstantWindow) recent_.pop_front();
  }

  json Row() {
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

  Clock::duration SinceLastRow() const { return Clock::now() - last_row_.at; }

  // Totals of the whole test (for the summary and the metrics).
  json Summary() const {
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

 private:
  DiskTest test_;
  std::string directory_;
  std::size_t threads_;
  int cores_;
  const SystemRoots& roots_;
  const TestCounters& counters_;
  Clock::time_point slice_end_;
  CounterSnapshot start_;
  CounterSnapshot last_row_;
  Result<CpuTimes> last_cpu_;
  std::deque<CounterSnapshot> recent_;
};

std::uint64_t NewRunId() {
  static std::mt19937_64 generator{std::random_device{}()};
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return generator() & 0xffffffffffffULL;
}

class DiskProbe final : public Probe {
 public:
  DiskProbe(const ProbeDeps& deps, DiskProbeSeams seams)
      : seams_(std::move(seams)),
        roots_(deps.roots),
        state_directory_(deps.state_directory),
        registry_handle_(RegistryFor(deps)),
        registry_(*registry_handle_),
        latency_(prometheus::BuildHistogram()
                     .Name("hostperf_disk_op_latency_seconds")
                     .Help("Latency of one block read or write of the disk probe, by operation.")
                     .Register(registry_)),
        read_bytes_(prometheus::BuildCounter()
                        .Name("hostperf_disk_read_bytes_total")
                        .Help("Bytes the disk probe read back and verified.")
                        .Register(registry_)),
        written_bytes_(prometheus::BuildCounter()
                           .Name("hostperf_disk_written_bytes_total")
                           .Help("Bytes the disk probe wrote.")
                           .Register(registry_)),
        verify_errors_(prometheus::BuildCounter()
                           .Name("hostperf_disk_verify_errors_total")
                           .Help("Blocks read back with a wrong CRC32C, file, offset or generation.")
                           .Register(registry_)),
        throughput_(prometheus::BuildGauge()
                        .Name("hostperf_disk_throughput_bytes_per_second")
                        .Help("Bytes per second (read plus written for ReWrite) of the last run of each test.")
                        .Register(registry_)),
        seeks_(prometheus::BuildGauge()
                   .Name("hostperf_disk_seeks_per_second")
                   .Help("Non-contiguous block reads per second of the last SkipRead test.")
                   .Register(registry_)),
        directory_info_(
            prometheus::BuildGauge()
                .Name("hostperf_disk_directory_info")
                .Help("Always 1 for each configured directory; role labels its use (configured), device_class "
                      "its storage as the probe reads it from /sys: <media>_<transport>_<filesystem>.")
                .Register(registry_)),
        directory_success_(prometheus::BuildGauge()
                               .Name("hostperf_disk_directory_success")
                               .Help("1 if the last run of the directory succeeded, else 0 (its throughput and seek "
                                     "figures are then dropped, not left at their last good value).")
                               .Register(registry_)),
        directory_failures_(prometheus::BuildCounter()
                                .Name("hostperf_disk_directory_failures_total")
                                .Help("Failed runs of the directory, by reason (every failing directory of a run "
                                      "counts, not only the first).")
                                .Register(registry_)),
        members_(prometheus::BuildGauge()
                     .Name("hostperf_disk_members")
                     .Help("Block devices in the array behind the directory (a multi-device btrfs, or the first "
                           "level of its stack with two or more devices, e.g. md's slaves); 1 for a single device.")
                     .Register(registry_)),
        member_info_(prometheus::BuildGauge()
                         .Name("hostperf_disk_member_info")
                         .Help("Always 1 for each member device behind the directory: the physical disks below it "
                               "(leaves), their model and serial where sysfs shows them.")
                         .Register(registry_)),
        member_seconds_per_op_(prometheus::BuildGauge()
                                   .Name("hostperf_disk_member_seconds_per_op")
                                   .Help("Time the member device spent per read or write during the probe's last run "
                                         "of the directory (its /sys/block stat counters around the run; at least 8 "
                                         "operations).")
                                   .Register(registry_)),
        member_ratio_(prometheus::BuildGauge()
                          .Name("hostperf_disk_member_service_ratio")
                          .Help("The member's time per read or write over the median of its siblings' in the same "
                                "array, during the probe's last run (arrays of two or more members only).")
                          .Register(registry_)),
        member_bytes_(prometheus::BuildCounter()
                          .Name("hostperf_disk_member_bytes_total")
                          .Help("Bytes each member device read or wrote during the probe's runs of the directory "
                                "(all I/O of the device in those intervals).")
                          .Register(registry_)) {}

  std::string_view Name() const override { return "disk"; }

  void StartServices(const config::ProbeConfig& section) override {
    // Directory -> its info labels; none while disabled. The device class is
    // read here, once per start-up and reload, not per run: a directory's
    // storage does not change under a running daemon.
    std::map<std::string, prometheus::Labels> roles;
    if (section.schedule.enabled) {
      const auto& disk = dynamic_cast<const DiskProbeConfig&>(*section.settings);
      for (const auto& path : ConfiguredDirectories(disk)) {
        roles.emplace(path, prometheus::Labels{{"directory", path},
                                               {"role", RoleOf(disk, path)},
                                               {"device_class", DeviceClassOf(path, roots_)}});
      }
    }
    std::lock_guard lock(series_mu_);
    if (generation_ == 0) {
      // Start-up: the leftovers of runs of a process that no longer runs (a
      // crash, a kill -9), in every directory they recorded.
      if (const int removed = CleanRecordedLeftovers(state_directory_); removed > 0) {
        spdlog::info("disk probe: removed {} leftover scratch file(s) of crashed runs", removed);
      }
    }
    ++generation_;
    // A directory no longer configured loses every series (full-run-only
    // directories too): a removed volume must not leave stale series behind
    // for alerts and dashboards. No reference to a metric outlives series_mu_,
    // so Family::Remove is safe here.
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

 private:
  // Under the state directory unless the config names directories.
  std::string DefaultDirectory() const { return (state_directory_ / "disk").string(); }
  std::string RoleOf(const DiskProbeConfig& config, const std::string& path) const {
    if (const auto it = config.directory_roles.find(path); it != config.directory_roles.end()) return it->second;
    return std::string(config.directories.empty() ? kStateRole : kDataRole);
  }

  template <typename T>
  static void RemoveMetric(prometheus::Family<T>& family, const prometheus::Labels& labels) {
    if (!family.Has(labels)) return;
    if constexpr (std::is_same_v<T, prometheus::Histogram>) {
      family.Remove(&family.Add(labels, LatencyBuckets()));
    } else {
      family.Remove(&family.Add(labels));
    }
  }

  // Every series of one directory. Under series_mu_.
  void RemoveSeries(const std::string& path) {
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

  // The member series of `path` not in `keep`. Under series_mu_.
  void RemoveMemberSeries(const std::string& path, const std::set<prometheus::Labels>& keep) {
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

  // The array behind a directory, resolved at the start of a run; none when
  // the directory is on no block device (tmpfs, NFS): nothing to attribute.
  std::optional<MemberSampler> StartMembers(const std::string& path) const {
    auto stack = ResolveDirectoryStack(path, roots_);
    if (!stack) {
      spdlog::debug("disk probe: no block devices to attribute for {}: {}", path, stack.error());
      return std::nullopt;
    }
    MemberSampler sampler(std::move(stack).value(), roots_);
    sampler.Begin();
    return sampler;
  }

  // What each member did during the run: into the result, the metrics and,
  // for a member well above its siblings, a finding.
  void RecordMembers(const FullRunContext& ctx, const Plan& plan, const std::string& path, const MemberSampler& sampler,
                     json& dir_json) {
    const auto activity = sampler.End();
    const DirectoryStack& stack = sampler.stack();
    // Flat: a full run's result is printed on a CivetWeb worker's small
    // stack when the run API serves it (every level of nesting costs a
    // recursion there); the leaves are one comma-separated string.
    json members = json::array();
    for (const auto& member : stack.members) {
      json entry = {{"device", member.device}, {"leaves", member.LeavesText()}};
      if (!member.model.empty()) entry["model"] = member.model;
      if (!member.serial.empty()) entry["serial"] = member.serial;
      for (const auto& done : activity) {
        if (done.device != member.device) continue;
        entry.update({{"read_ops", done.read_ops},
                      {"write_ops", done.write_ops},
                      {"read_bytes", done.read_bytes},
                      {"write_bytes", done.write_bytes}});
        if (done.read_seconds_per_op) entry["read_seconds_per_op"] = *done.read_seconds_per_op;
        if (done.write_seconds_per_op) entry["write_seconds_per_op"] = *done.write_seconds_per_op;
        if (done.read_ratio) entry["read_ratio"] = *done.read_ratio;
        if (done.write_ratio) entry["write_ratio"] = *done.write_ratio;
      }
      members.push_back(std::move(entry));
    }
    const auto findings = SlowMemberFindings(activity, plan.member_slow_ratio);
    dir_json.update({{"array_stack", stack.top},
                     {"array_kind", stack.kind},
                     {"members", members},
                     {"slow_members", findings},
                     {"member_slow_ratio", plan.member_slow_ratio}});
    const json report = {{"directory", path},
                         {"stack", stack.top},
                         {"kind", stack.kind},
                         {"members", members},
                         {"slow_members", findings}};
    for (const auto& finding : findings) spdlog::warn("disk probe: array behind {}: {}", path, finding);
    if (ctx.on_report) ctx.on_report(Tagged("members", report));

    std::lock_guard lock(series_mu_);
    if (plan.generation != generation_ && !roles_.contains(path)) return;
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
        const prometheus::Labels labels = {
            {"directory", path}, {"device", done.device}, {"op", read ? "read" : "write"}};
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

  // The throughput and seek figures of one directory. Under series_mu_.
  void RemoveFigures(const std::string& path) {
    const prometheus::Labels dir_label = {{"directory", path}};
    for (const DiskTest test : kAllTests) {
      auto labels = dir_label;
      labels["test"] = std::string(TestName(test));
      RemoveMetric(throughput_, labels);
    }
    RemoveMetric(seeks_, dir_label);
  }

  // A directory that ran has no failure; one that did not is skipped
  // (scheduled runs without room or budget) or failed.
  struct DirectoryOutcome {
    std::optional<Failure> failure;
    bool skipped = false;
  };

  // The directory's own outcome: success per directory, its
  // reason counted, and a failed directory's figures dropped. A skip (no
  // room or budget for a scheduled run) and a cancellation leave them.
  void RecordDirectory(const Plan& plan, const std::string& path, const DirectoryOutcome& outcome) {
    if (outcome.skipped || (outcome.failure && outcome.failure->reason == "cancelled")) return;
    std::lock_guard lock(series_mu_);
    if (plan.generation != generation_ && !roles_.contains(path)) return;
    published_.insert(path);
    const prometheus::Labels dir_label = {{"directory", path}};
    directory_success_.Add(dir_label).Set(outcome.failure ? 0 : 1);
    if (!outcome.failure) return;
    RemoveFigures(path);
    directory_failures_.Add({{"directory", path}, {"reason", outcome.failure->reason}}).Increment();
    failure_reasons_.emplace(path, outcome.failure->reason);
  }
  std::vector<std::string> ConfiguredDirectories(const DiskProbeConfig& config) const {
    return config.directories.empty() ? std::vector<std::string>{DefaultDirectory()} : config.directories;
  }

  Plan MakePlan(const FullRunContext& ctx, bool full) const {
    const auto& config = ctx.Settings<DiskProbeConfig>();
    Plan plan;
    plan.full = full;
    static const FullRunOptions kDefaults;
    const FullRunOptions* given = plan.full ? ctx.Options<FullRunOptions>() : nullptr;
    const FullRunOptions& options = given != nullptr ? *given : kDefaults;
    plan.directories = !options.directories.empty() ? options.directories : ConfiguredDirectories(config);
    if (plan.full) {
      plan.threads = options.thread_count > 0
                         ? options.thread_count
                         : static_cast<std::size_t>(std::max(1, ReadCpuTopology(roots_).logical_cpus));
    } else {
      plan.threads = config.threads;
    }
    plan.files_per_thread = options.files_per_thread.value_or(config.files_per_thread);
    plan.method = plan.full ? options.method : FullRunMethod::kVioperf;
    plan.max_buffer_size = options.max_buffer_size.value_or(
        plan.method == FullRunMethod::kGpcheckperf ? kGpcheckperfDefaultBlockSize : config.max_buffer_size);
    plan.data_size_given = options.data_size_given;
    plan.direct_io = !options.disable_direct_io.value_or(config.disable_direct_io);
    plan.crc = !options.disable_crc.value_or(config.disable_crc);
    plan.preserve_files = options.preserve_files;
    plan.verbose = options.debug;
    plan.hdfs_ca_file = options.hdfs_ca_file;
    plan.member_slow_ratio = config.member_slow_ratio;
    plan.attribute_members = config.attribute_members;
    // Scheduled: Write and ReWrite together write bytes_per_run.
    plan.data_size = plan.full ? options.data_size : std::max<std::uint64_t>(config.bytes_per_run / 2, 1);
    plan.reserve = config.reserve;
    plan.duration = options.duration;
    plan.log_interval = options.log_interval;
    std::lock_guard lock(series_mu_);
    plan.generation = generation_;
    return plan;
  }

  // Both faces share the directory run; a scheduled run has no options and
  // no callbacks.
  ProbeOutcome MeasureScheduled(const ScheduledContext& ctx) override {
    FullRunContext without_callbacks;
    static_cast<RunContext&>(without_callbacks) = ctx;
    return Measure(without_callbacks, /*full=*/false);
  }
  ProbeOutcome MeasureFull(const FullRunContext& ctx) override { return Measure(ctx, /*full=*/true); }

  ProbeOutcome Measure(const FullRunContext& ctx, bool full) {
    const Plan plan = MakePlan(ctx, full);
    if (plan.method == FullRunMethod::kGpcheckperf) return MeasureAllAtOnce(ctx, plan);
    const auto topology = ReadCpuTopology(roots_);
    const int cores = std::max(1, topology.physical_cores);
    const auto start = Clock::now();
    const auto end = plan.full ? std::min(ctx.deadline, start + plan.duration) : start;

    json result = {
        {"mode", plan.full ? "full" : "scheduled"},
        {"physical_cores", cores},
        {"logical_cpus", topology.logical_cpus},
        {"thread_count", plan.threads},
        {"files_per_thread", plan.files_per_thread},
        {"crc", plan.crc},
        {"directories", json::array()},
        {"rows", json::array()},
    };
    std::optional<Failure> failure;
    std::optional<Failure> skip;
    std::size_t ran = 0;
    std::size_t tests_total = 0;
    for (const auto& path : plan.directories)
      tests_total += hdfs::IsHdfsUrl(path) ? kHdfsTests.size() : kAllTests.size();
    TimeShare share{end, tests_total};
    for (const auto& path : plan.directories) {
      json dir_json = {{"directory", path}};
      const auto outcome = hdfs::IsHdfsUrl(path) ? RunHdfsDirectory(ctx, plan, path, cores, share, dir_json, result)
                                                 : RunDirectory(ctx, plan, path, cores, share, dir_json, result);
      RecordDirectory(plan, path, outcome);
      if (outcome.failure) {
        dir_json["error"] = {{"reason", outcome.failure->reason}, {"message", outcome.failure->message}};
        if (outcome.skipped) {
          dir_json["skipped"] = true;
          if (!skip) skip = outcome.failure;
        } else if (!failure) {
          failure = outcome.failure;
        }
      } else {
        ++ran;
      }
      result["directories"].push_back(std::move(dir_json));
      if (ctx.ShouldStop() && !failure) failure = Stopped(ctx, "");
      if (failure && (failure->reason == "cancelled" || failure->reason == "timeout")) break;
    }
    result["seconds"] = Seconds(Clock::now() - start).count();
    if (failure) return ProbeOutcome::Failure(*failure, std::move(result));
    if (ran == 0 && skip) return ProbeOutcome::Skipped(skip->reason, skip->message);
    return ProbeOutcome::Success(std::move(result));
  }

  static DirectoryOutcome Failed(Failure failure) { return {std::move(failure), false}; }

  // gpcheckperf's disk test (FullRunMethod::kGpcheckperf): one sequential
  // writer per directory, all at once, data_size in total; then one reader
  // per directory, all at once. Each pass is timed from its first start to
  // its last end, so the host's figure is its directories' combined
  // bandwidth; every directory's own interval is in the result.
  ProbeOutcome MeasureAllAtOnce(const FullRunContext& ctx, const Plan& plan) {
    const auto start = Clock::now();
    json result = {{"mode", plan.full ? "full" : "scheduled"},
                   {"method", "gpcheckperf"},
                   {"direct_io", plan.direct_io},
                   {"directories", json::array()}};
    const auto fail = [&](Failure failure) { return ProbeOutcome::Failure(std::move(failure), std::move(result)); };
    // gpcheckperf's default: twice the RAM, so that the page cache cannot
    // hold the file (with O_DIRECT a smaller size is valid too).
    std::uint64_t total = plan.data_size;
    if (!plan.data_size_given) {
      const auto ram = ReadMemTotalBytes(roots_);
      if (!ram) {
        return fail({"bad_options", "cannot read MemTotal in " + (roots_.proc / "meminfo").string() +
                                        " for the default data size (twice the RAM): give data_size"});
      }
      total = 2 * *ram;
    }
    const std::uint64_t block = plan.max_buffer_size;
    if (plan.data_size_given && total % block != 0) {
      return fail({"bad_options", fmt::format("data_size {} is not a multiple of the block size {}", total, block)});
    }
    total -= total % block;
    const std::uint64_t blocks = total / block;
    const std::size_t count = plan.directories.size();
    for (const auto& path : plan.directories) {
      if (hdfs::IsHdfsUrl(path)) {
        return fail({"bad_options", "\"" + path +
                                        "\": gpcheckperf's disk test writes; HDFS directories are read by "
                                        "vioperf's tests only (hostperf io)"});
      }
    }
    if (blocks < count) {
      return fail({"bad_options",
                   fmt::format("data_size {} is less than one {}-byte block per directory ({})", total, block, count)});
    }
    result["block_size"] = block;
    result["data_bytes"] = total;

    struct Lane {
      std::unique_ptr<TestDirectory> dir;
      std::unique_ptr<RunRecord> record;  // declared before the files: outlives them
      std::unique_ptr<Workload> workload;
      json entry;
      std::optional<Failure> failure;  // this directory's own
      std::optional<MemberSampler> members;
    };
    std::vector<Lane> lanes(count);
    for (std::size_t i = 0; i < count; ++i) lanes[i].entry = {{"directory", plan.directories[i]}};
    std::optional<Failure> failure;  // the run's: the first directory's failure, or a stop
    const auto lane_failed = [&](std::size_t i, Failure why) {
      lanes[i].entry["error"] = {{"reason", why.reason}, {"message", why.message}};
      if (!failure) failure = why;
      lanes[i].failure = std::move(why);
    };
    const auto finish = [&]() {
      for (std::size_t i = 0; i < count; ++i) {
        Lane& lane = lanes[i];
        // A directory that another's failure or a stop kept from finishing
        // has no outcome of its own.
        const DirectoryOutcome outcome{lane.failure, !lane.failure && !lane.entry.contains("read")};
        RecordDirectory(plan, plan.directories[i], outcome);
        if (lane.members && !failure) RecordMembers(ctx, plan, plan.directories[i], *lane.members, lane.entry);
        if (plan.preserve_files && !failure && lane.workload) lane.entry["preserved_files"] = lane.workload->Preserve();
        result["directories"].push_back(std::move(lane.entry));
      }
      result["seconds"] = Seconds(Clock::now() - start).count();
      lanes.clear();  // the files go before the outcome is returned
      return failure ? ProbeOutcome::Failure(*failure, std::move(result)) : ProbeOutcome::Success(std::move(result));
    };

    for (std::size_t i = 0; i < count && !failure; ++i) {
      const std::string& path = plan.directories[i];
      Lane& lane = lanes[i];
      auto opened = OpenDirectory(plan, path, lane.entry);
      if (!opened.ok()) {
        lane_failed(i, opened.failure());
        break;
      }
      lane.dir = std::move(opened).value();
      // The blocks shared out so that the directories add up to `total`.
      const std::uint64_t bytes = (blocks / count + (i < blocks % count ? 1 : 0)) * block;
      lane.entry.update({{"alignment", lane.dir->alignment()}, {"file_size", bytes}});
      if (plan.direct_io && block % lane.dir->alignment() != 0) {
        lane_failed(i, {"bad_options", fmt::format("block size {} is not a multiple of the direct I/O alignment {} "
                                                   "of \"{}\"",
                                                   block, lane.dir->alignment(), path)});
        break;
      }
      if (auto room = CheckRoom(ctx, plan, *lane.dir, path, bytes); !room.ok()) {
        lane_failed(i, room.failure());
        break;
      }
      WorkloadOptions options;
      options.block_size = block;
      options.file_size = bytes;
      options.direct_io = plan.direct_io;
      // gpcheckperf checks no data; the block headers still are.
      options.crc = false;
      options.verbose = plan.verbose;
      options.run_id = NewRunId();
      lane.record = RecordScratchFiles(path, options.run_id);
      auto created = Workload::Create(*lane.dir, options);
      if (!created.ok()) {
        lane_failed(i, created.failure());
        break;
      }
      lane.workload = std::move(created).value();
      lane.members = plan.attribute_members ? StartMembers(path) : std::nullopt;
      if (ctx.on_report) ctx.on_report(Tagged("directory", lane.entry));
    }
    if (failure) return finish();

    for (const DiskTest test : {DiskTest::kWrite, DiskTest::kRead}) {
      const std::string key = test == DiskTest::kWrite ? "write" : "read";
      if (ctx.on_progress) {
        ctx.on_progress({std::string(TestName(test)),
                         std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start),
                         {}});
      }
      std::vector<TestCounters> counters(count);
      std::vector<OpLatencies> latencies(count);
      std::vector<Result<void>> outcomes(count);
      std::vector<Clock::time_point> began(count);
      std::vector<Clock::time_point> ended(count);
      std::vector<double> began_unix(count);
      std::vector<double> ended_unix(count);
      std::atomic<bool> stop{false};
      {
        std::vector<std::jthread> writers;
        for (std::size_t i = 0; i < count; ++i) {
          writers.emplace_back([&, i] {
            began[i] = Clock::now();
            began_unix[i] = UnixSeconds();
            // One pass: the slice ends as it starts.
            outcomes[i] = lanes[i].workload->Run(test, began[i], stop, counters[i], latencies[i], [&] {
              if (ctx.ShouldStop()) stop.store(true);
            });
            // gpcheckperf times its writes up to the end of a sync.
            if (test == DiskTest::kWrite && outcomes[i].ok()) outcomes[i] = lanes[i].workload->Sync();
            ended[i] = Clock::now();
            ended_unix[i] = UnixSeconds();
            // One directory's I/O error ends the pass for all.
            if (!outcomes[i].ok()) stop.store(true);
          });
        }
      }
      std::uint64_t bytes_total = 0;
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t bytes =
            test == DiskTest::kWrite ? counters[i].bytes_written.load() : counters[i].bytes_read.load();
        bytes_total += bytes;
        lanes[i].entry[key] = {{"bytes", bytes},
                               {"seconds", Seconds(ended[i] - began[i]).count()},
                               {"started_unix_seconds", began_unix[i]},
                               {"finished_unix_seconds", ended_unix[i]}};
        PublishTotals(plan, {{"directory", plan.directories[i]}}, latencies[i], counters[i]);
        if (!outcomes[i].ok()) {
          lane_failed(i, outcomes[i].failure());
        } else if (const auto bad = counters[i].verify_errors.load(); bad > 0) {
          lane_failed(i, {"verify_error", fmt::format("{} block(s) read back wrong in \"{}\"; first: {}", bad,
                                                      plan.directories[i], lanes[i].workload->FirstVerifyError())});
        }
      }
      const auto first = *std::min_element(began.begin(), began.end());
      const auto last = *std::max_element(ended.begin(), ended.end());
      result["sequential"][key] = {{"bytes", bytes_total}, {"seconds", Seconds(last - first).count()}};
      if (!failure && ctx.ShouldStop()) failure = Stopped(ctx, "");
      if (failure) break;
    }
    return finish();
  }

  static double UnixSeconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  // The files of one directory: blocks of max_buffer_size rounded down to the
  // alignment, data_size shared by the files.
  struct Layout {
    std::size_t block = 0;
    std::size_t files = 0;
    std::uint64_t file_size = 0;
    std::uint64_t total = 0;
  };

  static Result<Layout> PlanLayout(const Plan& plan, const TestDirectory& dir, const std::string& path) {
    const std::size_t alignment = dir.alignment();
    Layout layout;
    layout.block = plan.max_buffer_size / alignment * alignment;
    if (layout.block < alignment || layout.block < kBlockHeaderSize) {
      return Failure{"bad_options", fmt::format("max_buffer_size {} is smaller than the alignment {} of \"{}\"",
                                                plan.max_buffer_size, alignment, path)};
    }
    layout.files = plan.threads * plan.files_per_thread;
    layout.file_size = std::max<std::uint64_t>(plan.data_size / layout.files / layout.block, 1) * layout.block;
    layout.total = layout.file_size * layout.files;
    return layout;
  }

  static WorkloadOptions MakeWorkloadOptions(const Plan& plan, const Layout& layout) {
    WorkloadOptions options;
    options.threads = plan.threads;
    options.files_per_thread = plan.files_per_thread;
    options.block_size = layout.block;
    options.file_size = layout.file_size;
    options.direct_io = plan.direct_io;
    options.crc = plan.crc;
    options.idle_io_priority = !plan.full;
    options.verbose = plan.verbose;
    options.run_id = NewRunId();
    return options;
  }

  // The remaining time of a full run, shared by the remaining tests.
  struct TimeShare {
    Clock::time_point end;
    std::size_t tests_total = 0;
    std::size_t tests_done = 0;

    Clock::time_point NextSliceEnd(bool full, Clock::time_point now) {
      const std::size_t left = tests_total - tests_done;
      ++tests_done;
      return full && end > now ? now + (end - now) / static_cast<long>(std::max<std::size_t>(left, 1)) : now;
    }
  };

  static Failure Stopped(const FullRunContext& ctx, const std::string& where) {
    return {ctx.Cancelled() ? "cancelled" : "timeout",
            std::string("disk run ") + (ctx.Cancelled() ? "cancelled" : "timed out") + where};
  }

  DirectoryOutcome RunDirectory(const FullRunContext& ctx, const Plan& plan, const std::string& path, int cores,
                                TimeShare& share, json& dir_json, json& result) {
    auto opened = OpenDirectory(plan, path, dir_json);
    if (!opened.ok()) return Failed(opened.failure());
    const TestDirectory& dir = **opened;
    const auto layout = PlanLayout(plan, dir, path);
    if (!layout.ok()) return Failed(layout.failure());
    dir_json.update({{"direct_io", plan.direct_io},
                     {"buffer_size", layout->block},
                     {"alignment", dir.alignment()},
                     {"alignment_source", dir.alignment_source()},
                     {"file_size", layout->file_size},
                     {"files", layout->files},
                     {"data_bytes", layout->total}});
    // Without room or budget a scheduled run skips the directory; a full run fails.
    if (auto room = CheckRoom(ctx, plan, dir, path, layout->total); !room.ok()) {
      return {room.failure(), !plan.full};
    }
    if (ctx.on_report) ctx.on_report(Tagged("directory", dir_json));

    const WorkloadOptions workload_options = MakeWorkloadOptions(plan, *layout);
    // Declared before the files, so destroyed after them.
    const auto record = RecordScratchFiles(path, workload_options.run_id);
    auto created = Workload::Create(dir, workload_options);
    if (!created.ok()) return Failed(created.failure());
    Workload& workload = **created;
    std::uint64_t verify_errors = 0;
    auto members = plan.attribute_members ? StartMembers(path) : std::nullopt;
    const auto tested = RunTests(ctx, plan, path, cores, share, kAllTests, workload, dir_json, result, verify_errors);
    if (members && tested.ok()) RecordMembers(ctx, plan, path, *members, dir_json);
    if (plan.preserve_files && tested.ok()) dir_json["preserved_files"] = workload.Preserve();
    if (!tested.ok()) return Failed(tested.failure());
    if (verify_errors > 0) {
      return Failed({"verify_error", fmt::format("{} block(s) read back wrong in \"{}\"; first: {}", verify_errors,
                                                 path, workload.FirstVerifyError())});
    }
    if (ctx.ShouldStop()) return Failed(Stopped(ctx, " in \"" + path + "\""));
    return {};
  }

  // vioperf's HDFS test of one directory URL: Read and SkipRead over its
  // files of 10 MB or more, one file per thread at least, through WebHDFS.
  // Nothing is written, so neither room nor the byte budget is checked.
  DirectoryOutcome RunHdfsDirectory(const FullRunContext& ctx, const Plan& plan, const std::string& url, int cores,
                                    TimeShare& share, json& dir_json, json& result) {
    if (!plan.full) {
      return Failed({"bad_options", "\"" + url + "\": HDFS directories are read by full runs only"});
    }
    auto env = hdfs::HdfsEnvironment::FromProcess();
    env.ca_file = plan.hdfs_ca_file;
    auto conf = hdfs::LoadHadoopConf(env.conf_dir);
    if (!conf) return Failed({"bad_options", conf.error()});
    auto target = hdfs::ResolveHdfsUrl(url, *conf);
    if (!target) return Failed({"bad_options", target.error()});
    auto created = hdfs::WebHdfsClient::Create(*target, env);
    if (!created) return Failed({"bad_options", created.error()});
    const hdfs::WebHdfsClient& client = **created;
    const auto status = client.GetFileStatus(target->path);
    if (!status) return Failed(status.failure());
    if (!status->directory) {
      return Failed({"bad_directory", "\"" + url + "\" is a file: vioperf reads a directory of files"});
    }
    auto listed = client.ListStatus(target->path);
    if (!listed) return Failed(listed.failure());
    std::vector<hdfs::FileStatus> files;
    std::size_t small = 0;
    std::uint64_t file_bytes = 0;
    for (auto& entry : *listed) {
      if (entry.directory) continue;
      if (entry.length < kHdfsMinFileSize) {
        ++small;
        continue;
      }
      file_bytes += entry.length;
      files.push_back(std::move(entry));
    }
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    if (files.size() < plan.threads) {
      return Failed({"bad_directory",
                     fmt::format("\"{}\" holds {} file(s) of 10 MB or more{}; vioperf reads one file per thread, so "
                                 "{} threads need {} such files (add files or lower --thread-count)",
                                 url, files.size(), small > 0 ? fmt::format(" ({} smaller ignored)", small) : "",
                                 plan.threads, plan.threads)});
    }
    dir_json.update({{"hdfs", true},
                     {"namenode", client.ActiveNameNode()},
                     {"buffer_size", plan.max_buffer_size},
                     {"files", files.size()},
                     {"file_bytes", file_bytes},
                     {"small_files_ignored", small},
                     {"user", target->kerberos ? "" : env.user_name}});
    if (!target->nameservice.empty()) dir_json["nameservice"] = target->nameservice;
    if (ctx.on_report) ctx.on_report(Tagged("directory", dir_json));
    hdfs::HdfsReadWorkload workload(client, std::move(files), plan.threads, plan.max_buffer_size);
    std::uint64_t verify_errors = 0;
    const auto tested = RunTests(ctx, plan, url, cores, share, kHdfsTests, workload, dir_json, result, verify_errors);
    if (!tested.ok()) return Failed(tested.failure());
    if (ctx.ShouldStop()) return Failed(Stopped(ctx, " in \"" + url + "\""));
    return {};
  }

  // Opens a directory under test (creating the default one) and removes a
  // crashed run's scratch files from it.
  Result<std::unique_ptr<TestDirectory>> OpenDirectory(const Plan& plan, const std::string& path, json& dir_json) {
    const bool default_dir = plan.directories.size() == 1 && path == DefaultDirectory();
    if (default_dir) {
      std::error_code ec;
      std::filesystem::create_directories(path, ec);
    }
    auto opened = TestDirectory::Open(path, roots_);
    if (!opened.ok()) return opened;
    if (const int removed = (*opened)->RemoveLeftovers(); removed > 0) {
      spdlog::info("disk probe: removed {} leftover scratch file(s) in {}", removed, path);
      dir_json["leftovers_removed"] = removed;
    }
    return opened;
  }

  // Recorded in the state directory before the first scratch file exists,
  // so that the start-up after a crash cleans this directory too, whether
  // configured or not; the record goes when the result is destroyed, which
  // must be after the files. (A CLI run without a state directory on this
  // host creates none.)
  std::unique_ptr<RunRecord> RecordScratchFiles(const std::string& path, std::uint64_t run_id) const {
    std::error_code ec;
    if (state_directory_.empty() || !std::filesystem::is_directory(state_directory_, ec)) {
      spdlog::debug("disk probe: no state directory {} to record {} in", state_directory_.string(), path);
      return nullptr;
    }
    auto record = RunRecord::Create(state_directory_, path, run_id);
    if (record.ok()) return std::move(record).value();
    spdlog::warn(
        "disk probe: cannot record {} in the state directory ({}); a crash now would leave its scratch "
        "files for an operator to remove",
        path, record.error());
    return nullptr;
  }

  // The free-space guard (data plus the reserve) and, for scheduled runs, the
  // hourly byte budget.
  Result<void> CheckRoom(const FullRunContext& ctx, const Plan& plan, const TestDirectory& dir, const std::string& path,
                         std::uint64_t total) {
    const std::uint64_t free = dir.FreeBytes();
    if (free < total + plan.reserve) {
      return Failure{"no_space", fmt::format("\"{}\" has {} free; the test needs {} plus a reserve of {}", path,
                                             config::FormatSize(free), config::FormatSize(total),
                                             config::FormatSize(plan.reserve))};
    }
    if (!plan.full) return ChargeBudget(ctx, 2 * total);
    return {};
  }

  // Runs `tests` in order on `workload` (a Workload or an HdfsReadWorkload),
  // one table row per log interval (full runs) and one at the end of each;
  // stops at the first I/O error. Writes the per-test summaries and the
  // verify error count into `dir_json`.
  template <typename AnyWorkload, std::size_t N>
  Result<void> RunTests(const FullRunContext& ctx, const Plan& plan, const std::string& path, int cores,
                        TimeShare& share, const std::array<DiskTest, N>& tests_to_run, AnyWorkload& workload,
                        json& dir_json, json& result, std::uint64_t& verify_errors) {
    const prometheus::Labels dir_label = {{"directory", path}};
    std::atomic<bool> stop{false};
    Result<void> io;
    json tests = json::array();
    for (const DiskTest test : tests_to_run) {
      const auto now = Clock::now();
      const auto slice_end = share.NextSliceEnd(plan.full, now);
      TestCounters counters;
      OpLatencies latencies;
      RowSampler sampler(test, path, plan.threads, cores, roots_, counters, slice_end);
      auto next_row = now + plan.log_interval;
      const auto emit = [&](json row) {
        if (ctx.on_progress) {
          ctx.on_progress({std::string(TestName(test)), ToNanoseconds(row["elapsed_seconds"].get<double>()),
                           ToNanoseconds(row["remaining_seconds"].get<double>())});
        }
        if (ctx.on_report) ctx.on_report(Tagged("row", row));
        result["rows"].push_back(std::move(row));
      };
      io = workload.Run(test, slice_end, stop, counters, latencies, [&] {
        if (ctx.ShouldStop()) stop.store(true);
        sampler.Sample();
        if (plan.full && Clock::now() >= next_row) {
          emit(sampler.Row());
          next_row += plan.log_interval;
        }
      });
      // The last row, unless one was just printed (it would average nothing).
      if (!plan.full || sampler.SinceLastRow() >= kMinFinalRowGap) emit(sampler.Row());
      json summary = sampler.Summary();
      tests.push_back(summary);
      verify_errors += counters.verify_errors.load();
      Publish(plan, dir_label, test, summary, latencies, counters);
      if (seams_.after_test) seams_.after_test(path, TestName(test));
      if (!io.ok() || ctx.ShouldStop()) break;
    }
    dir_json["tests"] = std::move(tests);
    dir_json["verify_errors"] = verify_errors;
    return io;
  }

  // Refuses a scheduled run whose planned writes would exceed the hourly disk budget.
  Result<void> ChargeBudget(const FullRunContext& ctx, std::uint64_t bytes) {
    if (auto over = ctx.budget->TrySpend(BudgetResource::kDiskBytes, static_cast<double>(bytes))) {
      return Failure{"budget_exhausted", "writing " + *over};
    }
    return {};
  }

  void Publish(const Plan& plan, const prometheus::Labels& dir_label, DiskTest test, const json& summary,
               const OpLatencies& latencies, const TestCounters& counters) {
    std::lock_guard lock(series_mu_);
    if (!PublishTotalsLocked(plan, dir_label, latencies, counters)) return;
    auto labels = dir_label;
    labels["test"] = std::string(TestName(test));
    throughput_.Add(labels).Set(summary["throughput_bytes_per_second"].get<double>());
    if (test == DiskTest::kSkipRead) seeks_.Add(dir_label).Set(summary["seeks_per_second"].get<double>());
  }

  // Latencies, bytes and verify errors; gpcheckperf's method sets no
  // throughput gauge (its one-writer figures are not vioperf's).
  void PublishTotals(const Plan& plan, const prometheus::Labels& dir_label, const OpLatencies& latencies,
                     const TestCounters& counters) {
    std::lock_guard lock(series_mu_);
    PublishTotalsLocked(plan, dir_label, latencies, counters);
  }
  // False when a reload during the run removed this directory: its figures
  // are dropped rather than bring its series back.
  bool PublishTotalsLocked(const Plan& plan, const prometheus::Labels& dir_label, const OpLatencies& latencies,
                           const TestCounters& counters) {
    const std::string& path = dir_label.at("directory");
    if (plan.generation != generation_ && !roles_.contains(path)) return false;
    published_.insert(path);
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

  DiskProbeSeams seams_;
  SystemRoots roots_;
  std::filesystem::path state_directory_;
  std::shared_ptr<prometheus::Registry> registry_handle_;  // RegistryFor(deps)
  prometheus::Registry& registry_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Counter>& read_bytes_;
  prometheus::Family<prometheus::Counter>& written_bytes_;
  prometheus::Family<prometheus::Counter>& verify_errors_;
  prometheus::Family<prometheus::Gauge>& throughput_;
  prometheus::Family<prometheus::Gauge>& seeks_;
  prometheus::Family<prometheus::Gauge>& directory_info_;
  prometheus::Family<prometheus::Gauge>& directory_success_;
  prometheus::Family<prometheus::Counter>& directory_failures_;
  prometheus::Family<prometheus::Gauge>& members_;
  prometheus::Family<prometheus::Gauge>& member_info_;
  prometheus::Family<prometheus::Gauge>& member_seconds_per_op_;
  prometheus::Family<prometheus::Gauge>& member_ratio_;
  prometheus::Family<prometheus::Counter>& member_bytes_;
  // Per directory, the labels of every member series made (to remove them
  // with the directory, or when a device leaves the array).
  std::map<std::string, std::set<prometheus::Labels>> member_series_;
  std::set<std::pair<std::string, std::string>> failure_reasons_;  // (directory, reason) series made
  // Guards the per-directory series against a reload removing them while a
  // run publishes (references from Family::Add are used only under it).
  mutable std::mutex series_mu_;
  std::uint64_t generation_ = 0;                     // StartServices calls so far
  std::map<std::string, prometheus::Labels> roles_;  // configured directory -> its directory_info labels
  std::set<std::string> published_;                  // directories that have series
};

}  // namespace

std::unique_ptr<Probe> CreateDiskProbe(const ProbeDeps& deps) { return CreateDiskProbe(deps, DiskProbeSeams{}); }

std::unique_ptr<Probe> CreateDiskProbe(const ProbeDeps& deps, DiskProbeSeams seams) {
  return std::make_unique<DiskProbe>(deps, std::move(seams));
}

}  // namespace hostperf::probes::disk
