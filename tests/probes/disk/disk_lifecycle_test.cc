// The disk probe's per-directory series over reloads: directory_info with
// its role from start-up, and every series of a directory dropped when the
// config no longer lists it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hostperf/probes/disk/disk_probe.h"
#include "hostperf/probes/disk/members.h"
#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/disk/scratch.h"
#include "temp_dir.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;
using test_support::TempDir;
using Status = ProbeOutcome::Status;
using Labels = std::map<std::string, std::string>;

// Every per-directory family of the probe.
const std::vector<std::string> kDirectoryFamilies = {
    "hostperf_disk_op_latency_seconds",
    "hostperf_disk_read_bytes_total",
    "hostperf_disk_written_bytes_total",
    "hostperf_disk_verify_errors_total",
    "hostperf_disk_throughput_bytes_per_second",
    "hostperf_disk_seeks_per_second",
    "hostperf_disk_directory_info",
    "hostperf_disk_directory_success",
};

class DiskLifecycleTest : public ::testing::Test {
 protected:
  DiskLifecycleTest() {
    deps_.registry = &registry_;
    deps_.state_directory = state_.path();
    probe_ = CreateDiskProbe(deps_);
    Disk().bytes_per_run = 256 * 1024;
    Disk().max_buffer_size = 64 * 1024;
    Disk().reserve = 1;
    Disk().disable_direct_io = true;
  }

  DiskProbeConfig& Disk() { return config_.EditSettings<DiskProbeConfig>(); }
  std::string A() const { return a_.path().string(); }
  std::string B() const { return b_.path().string(); }

  // What the daemon does at start-up and after each successful reload.
  void Apply() { probe_->StartServices(config_.Section("disk")); }

  ProbeOutcome Run() { return probe_->RunScheduled(MakeScheduledContext(config_, "disk")); }
  ProbeOutcome RunFull(json options) {
    FullRunContext ctx = MakeFullRunContext(config_, "disk");
    ctx.on_report = on_report_;
    auto parsed = ParseProbeOptions("disk", options);
    if (!parsed) return ProbeOutcome::Failure(parsed.failure());
    ctx.options = std::move(parsed).value();
    return probe_->RunFull(ctx);
  }

  // The label sets of every sample of `family` in a fresh collection.
  std::vector<Labels> Series(const std::string& family) {
    std::vector<Labels> out;
    for (const auto& collected : registry_.Collect()) {
      if (collected.name != family) continue;
      for (const auto& metric : collected.metric) {
        Labels labels;
        for (const auto& label : metric.label) labels[label.name] = label.value;
        out.push_back(std::move(labels));
      }
    }
    return out;
  }

  // Directories that have at least one series, over all families.
  std::set<std::string> DirectoriesWithSeries() {
    std::set<std::string> out;
    for (const auto& family : kDirectoryFamilies) {
      for (const auto& labels : Series(family)) out.insert(labels.at("directory"));
    }
    return out;
  }

  // directory_info's labels: the device class as the probe reads it from
  // this machine's /proc and /sys (the fixture-tree cases are in
  // disk_members_test.cc and DeviceClassIsReadAtStartUpAndOnReload).
  static Labels Info(const std::string& directory, const std::string& role) {
    return {{"directory", directory}, {"role", role}, {"device_class", DeviceClassOf(directory, SystemRoots{})}};
  }

  std::optional<double> Value(const std::string& family, const Labels& want) {
    for (const auto& collected : registry_.Collect()) {
      if (collected.name != family) continue;
      for (const auto& metric : collected.metric) {
        Labels labels;
        for (const auto& label : metric.label) labels[label.name] = label.value;
        if (labels != want) continue;
        return collected.type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value;
      }
    }
    return std::nullopt;
  }

  TempDir state_;
  TempDir a_;
  TempDir b_;
  prometheus::Registry registry_;
  ProbeDeps deps_;
  std::unique_ptr<Probe> probe_;
  config::Config config_ = DefaultConfig();
  std::function<void(const json&)> on_report_;
};

TEST_F(DiskLifecycleTest, DirectoryInfoAndVerifyErrorsExistFromStartUpWithRoles) {
  Disk().directories = {A(), B()};
  Disk().directory_roles = {{B(), "wal"}};
  Apply();
  EXPECT_EQ(Value("hostperf_disk_directory_info", Info(A(), "data")), 1);
  EXPECT_EQ(Value("hostperf_disk_directory_info", Info(B(), "wal")), 1);
  EXPECT_EQ(Series("hostperf_disk_directory_info").size(), 2u);
  EXPECT_EQ(Value("hostperf_disk_verify_errors_total", {{"directory", A()}}), 0);
  EXPECT_EQ(Value("hostperf_disk_verify_errors_total", {{"directory", B()}}), 0);
  // Nothing measured yet: no throughput or latency series.
  EXPECT_TRUE(Series("hostperf_disk_throughput_bytes_per_second").empty());
  EXPECT_TRUE(Series("hostperf_disk_op_latency_seconds").empty());
}

TEST_F(DiskLifecycleTest, DefaultDirectoryHasTheStateRole) {
  Apply();
  const std::string state_disk = (state_.path() / "disk").string();
  EXPECT_EQ(Series("hostperf_disk_directory_info"), (std::vector<Labels>{Info(state_disk, "state")}));
}

TEST_F(DiskLifecycleTest, ReloadWithoutADirectoryRemovesAllItsSeries) {
  Disk().directories = {A(), B()};
  Apply();
  const auto outcome = Run();
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.reason << ": " << outcome.message;
  ASSERT_EQ(DirectoriesWithSeries(), (std::set<std::string>{A(), B()}));
  // Every family has B's series before the reload.
  for (const auto& family : kDirectoryFamilies) {
    bool has_b = false;
    for (const auto& labels : Series(family)) has_b = has_b || labels.at("directory") == B();
    EXPECT_TRUE(has_b) << family;
  }
  const auto written_a = Value("hostperf_disk_written_bytes_total", {{"directory", A()}});
  ASSERT_TRUE(written_a.has_value());
  EXPECT_GT(*written_a, 0);
  const std::size_t latency_series_a = Series("hostperf_disk_op_latency_seconds").size() / 2;

  Disk().directories = {A()};
  Apply();
  EXPECT_EQ(DirectoriesWithSeries(), (std::set<std::string>{A()}));
  // A keeps its series and their values.
  EXPECT_EQ(Value("hostperf_disk_verify_errors_total", {{"directory", A()}}), 0);
  EXPECT_EQ(Value("hostperf_disk_written_bytes_total", {{"directory", A()}}), written_a);
  EXPECT_EQ(Series("hostperf_disk_op_latency_seconds").size(), latency_series_a);
  EXPECT_EQ(Series("hostperf_disk_throughput_bytes_per_second").size(), 4u);

  // The next run measures only A and does not bring B back.
  ASSERT_EQ(Run().status, Status::kSuccess);
  EXPECT_EQ(DirectoriesWithSeries(), (std::set<std::string>{A()}));
  EXPECT_EQ(Value("hostperf_disk_written_bytes_total", {{"directory", A()}}), 2 * *written_a);

  // Listed again: back at 0 from the reload on.
  Disk().directories = {A(), B()};
  Apply();
  EXPECT_EQ(Value("hostperf_disk_verify_errors_total", {{"directory", B()}}), 0);
  EXPECT_EQ(Value("hostperf_disk_written_bytes_total", {{"directory", B()}}), std::nullopt);
}

TEST_F(DiskLifecycleTest, RoleChangeReplacesTheInfoSeries) {
  Disk().directories = {A()};
  Apply();
  Disk().directory_roles = {{A(), "archive"}};
  Apply();
  EXPECT_EQ(Series("hostperf_disk_directory_info"), (std::vector<Labels>{Info(A(), "archive")}));
}

// Device_class comes from the probe's own roots (a fixture here),
// read at start-up and again at each reload, not at each run.
TEST(DiskDeviceClassLifecycleTest, DeviceClassIsReadAtStartUpAndOnReload) {
  TempDir state;
  TempDir fixture;
  std::filesystem::create_directories(fixture.path() / "proc" / "self");
  std::filesystem::create_directories(fixture.path() / "sys");
  const auto mountinfo = fixture.path() / "proc" / "self" / "mountinfo";
  std::ofstream(mountinfo) << "22 1 0:45 / /srv/scratch rw - tmpfs tmpfs rw\n";
  prometheus::Registry registry;
  ProbeDeps deps;
  deps.registry = &registry;
  deps.state_directory = state.path();
  deps.roots = {fixture.path() / "proc", fixture.path() / "sys"};
  const auto probe = CreateDiskProbe(deps);
  config::Config config = DefaultConfig();
  config.EditSettings<DiskProbeConfig>().directories = {"/srv/scratch/hostperf"};
  const auto info = [&] {
    std::vector<Labels> out;
    for (const auto& family : registry.Collect()) {
      if (family.name != "hostperf_disk_directory_info") continue;
      for (const auto& metric : family.metric) {
        Labels labels;
        for (const auto& label : metric.label) labels[label.name] = label.value;
        out.push_back(std::move(labels));
      }
    }
    return out;
  };
  probe->StartServices(config.Section("disk"));
  const Labels ram = {{"directory", "/srv/scratch/hostperf"}, {"role", "data"}, {"device_class", "ram_none_tmpfs"}};
  EXPECT_EQ(info(), std::vector<Labels>{ram});

  std::ofstream(mountinfo) << "22 1 0:46 / /srv/scratch rw - xfs server:/export rw\n";
  EXPECT_EQ(info(), std::vector<Labels>{ram});  // not re-read until a reload
  probe->StartServices(config.Section("disk"));
  const Labels other = {
      {"directory", "/srv/scratch/hostperf"}, {"role", "data"}, {"device_class", "unknown_unknown_xfs"}};
  EXPECT_EQ(info(), std::vector<Labels>{other});
}

TEST_F(DiskLifecycleTest, DisablingTheProbeRemovesEverySeries) {
  Disk().directories = {A()};
  Apply();
  ASSERT_EQ(Run().status, Status::kSuccess);
  config_.Section("disk").schedule.enabled = false;
  Apply();
  EXPECT_TRUE(DirectoriesWithSeries().empty());
}

TEST_F(DiskLifecycleTest, FullRunDirectoryOutsideTheConfigIsDroppedAtTheNextReload) {
  Disk().directories = {A()};
  Apply();
  const auto outcome =
      RunFull({{"directories", {B()}}, {"duration", "1s"}, {"data_size", "128kb"}, {"thread_count", 1}});
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.reason << ": " << outcome.message;
  EXPECT_EQ(DirectoriesWithSeries(), (std::set<std::string>{A(), B()}));
  Apply();
  EXPECT_EQ(DirectoriesWithSeries(), (std::set<std::string>{A()}));
}

TEST_F(DiskLifecycleTest, ReloadDuringARunKeepsTheRemovedDirectoryOut) {
  Disk().directories = {A(), B()};
  config::Config reloaded = config_;
  reloaded.EditSettings<DiskProbeConfig>().directories = {A()};
  // The reload lands after A's first test, before the run reaches B.
  bool reloaded_once = false;
  DiskProbeSeams seams;
  seams.after_test = [&](const std::string& directory, std::string_view) {
    if (directory != A() || reloaded_once) return;
    reloaded_once = true;
    probe_->StartServices(reloaded.Section("disk"));
  };
  probe_.reset();
  probe_ = CreateDiskProbe(deps_, std::move(seams));
  Apply();
  ASSERT_EQ(Run().status, Status::kSuccess);
  ASSERT_TRUE(reloaded_once);
  EXPECT_EQ(DirectoriesWithSeries(), (std::set<std::string>{A()}));
  EXPECT_GT(Value("hostperf_disk_written_bytes_total", {{"directory", A()}}).value_or(0), 0);
}

// The registry of directories in use, and "ours" across
// pid reuse.
TEST(DiskRunRecordTest, AnIdentityIsAliveOnlyWithTheSameBootPidAndStartTime) {
  const ProcessIdentity self = SelfIdentity();
  ASSERT_FALSE(self.boot_id.empty());
  ASSERT_GT(self.start_time, 0u);
  EXPECT_TRUE(IdentityAlive(self));
  ProcessIdentity rebooted = self;
  rebooted.boot_id = "00000000-0000-4000-8000-000000000000";
  EXPECT_FALSE(IdentityAlive(rebooted)) << "same pid, alive, but from an earlier boot";
  ProcessIdentity reused = self;
  reused.start_time += 1;
  EXPECT_FALSE(IdentityAlive(reused)) << "the pid now belongs to another process";
}

TEST(DiskRunRecordTest, StartUpCleansExactlyTheRecordedRunsOfGoneProcesses) {
  TempDir state;
  TempDir data;
  const auto touch = [&](const std::string& name) { std::ofstream(data.path() / name).flush(); };
  {
    auto record = RunRecord::Create(state.path(), data.path().string(), 77);
    ASSERT_TRUE(record.ok()) << record.error();
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(RunRecordDirectory(state.path())),
                            std::filesystem::directory_iterator()),
              1);
    // A run of this process in progress: its record protects its files.
    touch(ScratchName(77, 0));
    EXPECT_EQ(CleanRecordedLeftovers(state.path()), 0);
    EXPECT_TRUE(std::filesystem::exists(data.path() / ScratchName(77, 0)));
    std::filesystem::remove(data.path() / ScratchName(77, 0));
  }
  EXPECT_TRUE(std::filesystem::is_empty(RunRecordDirectory(state.path()))) << "the record goes with the run";

  // A run of this very pid from an earlier boot: gone, although the pid is alive.
  ProcessIdentity earlier = SelfIdentity();
  earlier.boot_id = "00000000-0000-4000-8000-000000000000";
  ASSERT_TRUE(WriteRunRecord(RunRecordDirectory(state.path()) / "x.run", earlier, data.path().string(), 5).ok());
  touch(ScratchName(5, 0));
  touch(ScratchName(5, 1));
  touch(ScratchName(6, 0));  // another run, not recorded: not ours to judge here
  touch("hostperf-preserved-" + std::to_string(::getpid()) + "-5-2.dat");
  touch("unrelated.dat");
  EXPECT_EQ(CleanRecordedLeftovers(state.path()), 2);
  EXPECT_FALSE(std::filesystem::exists(data.path() / ScratchName(5, 0)));
  EXPECT_FALSE(std::filesystem::exists(data.path() / ScratchName(5, 1)));
  EXPECT_TRUE(std::filesystem::exists(data.path() / ScratchName(6, 0)));
  EXPECT_TRUE(std::filesystem::exists(data.path() / ("hostperf-preserved-" + std::to_string(::getpid()) + "-5-2.dat")));
  EXPECT_TRUE(std::filesystem::exists(data.path() / "unrelated.dat"));
  EXPECT_TRUE(std::filesystem::is_empty(RunRecordDirectory(state.path())));

  // A record cut short by a crash is dropped.
  std::ofstream(RunRecordDirectory(state.path()) / "y.run") << "hostperf-disk-run 1\nboot_id";
  EXPECT_EQ(CleanRecordedLeftovers(state.path()), 0);
  EXPECT_TRUE(std::filesystem::is_empty(RunRecordDirectory(state.path())));
}

}  // namespace
}  // namespace hostperf::probes::disk
