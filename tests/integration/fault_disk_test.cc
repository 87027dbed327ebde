// Fault injection for the disk probe with real parts: a small ext4
// file system in a file on a loop device, filled up, taken away or made
// read-only while the daemon's probe runs, and a block corrupted on disk
// between the probe's write and its read-back. In every case the failure is
// data (success 0, a counted reason or verify error), no scratch file is left
// behind and the daemon keeps serving.
//
// The faults are timed with fanotify: the test holds the daemon's first open
// of a scratch file (FAN_OPEN_PERM), which comes after the probe's directory
// checks and free-space guard and before it reserves or writes a byte, does
// its damage and lets the open go on. Needs root (loop devices, mount,
// fanotify); skipped with the reason otherwise.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <signal.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fault_harness.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/disk/block.h"
#include "hostperf/probes/disk/disk_probe.h"
#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/disk/scratch.h"
#include "hostperf/probes/probe.h"
#include "net_http_fault_harness.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kPatience = seconds(60);  // upper bound of every wait; runs come every 3 s

// A shell command with the system directories on PATH (mkfs.ext4, losetup).
CommandResult Shell(const std::string& command) {
  return RunCommand("/bin/sh", {"-c", "PATH=/usr/sbin:/sbin:/usr/bin:/bin; " + command}, seconds(60));
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// A small ext4 file system in a file, attached to a loop device and mounted
// at <dir>/mnt. The destructor unmounts and detaches it whatever happened.
class LoopFileSystem {
 public:
  // Null, with the reason in `why`, when this host cannot do it.
  static std::unique_ptr<LoopFileSystem> Create(const std::string& dir, std::string& why) {
    if (::geteuid() != 0) {
      why = "needs root for loop devices and mount";
      return nullptr;
    }
    std::unique_ptr<LoopFileSystem> loop(new LoopFileSystem(dir));
    std::error_code ec;
    fs::create_directory(loop->mount_point_, ec);
    const auto mkfs = Shell("truncate -s 64M " + loop->image_ + " && mkfs.ext4 -q -F " + loop->image_);
    if (mkfs.status != 0) {
      why = "mkfs.ext4 failed: " + mkfs.err;
      return nullptr;
    }
    const auto attach = Shell("losetup --find --show " + loop->image_);
    if (attach.status != 0) {
      why = "no loop device (losetup: " + Trim(attach.err) + ")";
      return nullptr;
    }
    loop->device_ = Trim(attach.out);
    if (::mount(loop->device_.c_str(), loop->mount_point_.c_str(), "ext4", 0, nullptr) != 0) {
      why = "cannot mount " + loop->device_ + ": " + std::strerror(errno);
      return nullptr;
    }
    loop->mounted_ = true;
    return loop;
  }

  ~LoopFileSystem() {
    if (mounted_) Unmount(mount_point_);
    if (!device_.empty()) Shell("losetup -d " + device_);
  }

  // Unmounts `path`, waiting out a short EBUSY (a process still closing its
  // files), then lazily.
  static void Unmount(const std::string& path) {
    for (int attempt = 0; attempt < 50; ++attempt) {
      if (::umount2(path.c_str(), 0) == 0 || errno != EBUSY) return;
      std::this_thread::sleep_for(milliseconds(100));
    }
    ::umount2(path.c_str(), MNT_DETACH);
  }

  const std::string& mount_point() const { return mount_point_; }

 private:
  explicit LoopFileSystem(const std::string& dir) : image_(dir + "/ext4.img"), mount_point_(dir + "/mnt") {}
  std::string image_;
  std::string mount_point_;
  std::string device_;
  bool mounted_ = false;
};

#define MOUNT_LOOP_OR_SKIP(loop, dir)                                 \
  std::string loop##_why;                                             \
  const auto loop = LoopFileSystem::Create((dir).path(), loop##_why); \
  if (!(loop)) GTEST_SKIP() << "no loop-mounted ext4 on this host: " << loop##_why

// Holds the first open of a disk probe scratch file by process `pid` on the
// file system at `mount_point` until `action` has run (fanotify
// FAN_OPEN_PERM). Every other open goes on at once.
class ScratchOpenInterceptor {
 public:
  explicit ScratchOpenInterceptor(const std::string& mount_point) {
    fd_ = ::fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = std::string("fanotify_init: ") + std::strerror(errno);
      return;
    }
    if (::fanotify_mark(fd_, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN_PERM, AT_FDCWD, mount_point.c_str()) != 0) {
      error_ = std::string("fanotify_mark: ") + std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      return;
    }
    thread_ = std::thread([this] { Loop(); });
  }
  ~ScratchOpenInterceptor() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);  // allows anything still pending
  }
  ScratchOpenInterceptor(const ScratchOpenInterceptor&) = delete;
  ScratchOpenInterceptor& operator=(const ScratchOpenInterceptor&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& error() const { return error_; }
  // The next scratch open by `pid` runs `action` first.
  void Arm(pid_t pid, std::function<void()> action) {
    std::lock_guard lock(mutex_);
    pid_ = pid;
    action_ = std::move(action);
  }
  int fired() const { return fired_.load(); }

 private:
  static bool IsScratchFile(int fd) {
    char target[4096];
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), target, sizeof(target) - 1);
    if (n <= 0) return false;
    return fs::path(std::string(target, static_cast<std::size_t>(n)))
               .filename()
               .string()
               .rfind(probes::disk::kScratchPrefix, 0) == 0;
  }

  void Loop() {
    alignas(fanotify_event_metadata) char buffer[4096];
    while (!stop_.load()) {
      pollfd ready{fd_, POLLIN, 0};
      if (::poll(&ready, 1, 100) <= 0) continue;
      ssize_t length = ::read(fd_, buffer, sizeof(buffer));
      auto* event = reinterpret_cast<fanotify_event_metadata*>(buffer);
      for (; FAN_EVENT_OK(event, length); event = FAN_EVENT_NEXT(event, length)) {
        if (event->fd < 0) continue;
        std::function<void()> action;
        {
          std::lock_guard lock(mutex_);
          if (action_ && event->pid == pid_ && IsScratchFile(event->fd)) action = std::exchange(action_, nullptr);
        }
        if (action) {
          action();
          fired_.fetch_add(1);
        }
        const fanotify_response allow{event->fd, FAN_ALLOW};
        (void)!::write(fd_, &allow, sizeof(allow));
        ::close(event->fd);
      }
    }
  }

  int fd_ = -1;
  std::string error_;
  std::mutex mutex_;
  pid_t pid_ = 0;
  std::function<void()> action_;
  std::atomic<int> fired_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The daemon testing `data` every `interval` (the other probes off).
// The timeout leaves room for the test's fault, done while it holds the run
// (a slow fill-up must not turn `no_space` into `timeout`).
std::string DiskConfig(const TempDir& dir, const std::string& data, const std::string& interval = "3s") {
  return dir.Write("c.toml",
                   "state_directory = \"" + dir.path() + "/state\"\n" + "[scheduler]\nfirst_run_splay = \"" + interval +
                       "\"\n"
                       "[probes.cpu]\nenabled = false\n"
                       "[probes.memory]\nenabled = false\n"
                       "[probes.net]\nenabled = false\nports = [" +
                       std::to_string(FreeLoopbackPort()) +
                       "]\n"
                       "[probes.disk]\ninterval = \"" +
                       interval +
                       "\"\ntimeout = \"3s\"\n"
                       "directories = [\"" +
                       data + "\"]\nbytes_per_run = \"2mb\"\nmax_buffer_size = \"64kb\"\nreserve = \"1kb\"\n");
}

std::string Failures(const std::string& reason) {
  return "hostperf_probe_failures_total{probe=\"disk\",reason=\"" + reason + "\"}";
}
const std::string kRuns = "hostperf_probe_runs_total{probe=\"disk\"}";
const std::string kSuccess = "hostperf_probe_success{probe=\"disk\"}";

// A daemon on the loop file system, the interceptor watching it.
struct DiskFaultRig {
  DiskFaultRig(const TempDir& dir, const LoopFileSystem& loop)
      : data(loop.mount_point() + "/data"),
        daemon((fs::create_directory(data), DiskConfig(dir, data))),
        interceptor(loop.mount_point()) {}

  // Waits for a successful run after the current one.
  bool WaitForSuccess() {
    const double runs = daemon.Value(kRuns);
    return daemon.WaitFor(kRuns, runs + 2, kPatience) &&
           Eventually([&] { return daemon.Value(kSuccess) == 1; }, kPatience);
  }
  // Still answering /metrics and /-/healthy, and alive.
  void ExpectServing() {
    EXPECT_FALSE(daemon.process().Wait(milliseconds(0)).has_value()) << daemon.process().Stderr();
    EXPECT_THAT(daemon.Metrics(), HasSubstr("hostperf_probe_runs_total{probe=\"disk\"}"));
    const auto healthy = daemon.Get("/-/healthy");
    EXPECT_TRUE(healthy && healthy->status == 200);
  }
  // Failed runs counted under any reason but `reason`: the run the fault hit
  // mid-way finished well (it works through its directory descriptor).
  double OtherFailures(const std::string& reason) {
    const std::string prefix = "hostperf_probe_failures_total{probe=\"disk\",reason=\"";
    double total = 0;
    std::istringstream lines(daemon.Metrics());
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(prefix, 0) == 0 && line.rfind(prefix + reason + "\"}", 0) != 0) {
        total += std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return total;
  }
  void StopAndExpectClean(const std::string& root) {
    daemon.process().Signal(SIGTERM);
    EXPECT_EQ(daemon.process().Wait(seconds(20)), 0) << daemon.process().Stderr();
    EXPECT_THAT(ScratchFilesUnder(root), ::testing::IsEmpty());
  }

  std::string data;
  FaultDaemon daemon;
  ScratchOpenInterceptor interceptor;
};

#define INTERCEPT_OR_SKIP(rig) \
  if (!(rig).interceptor.ok()) GTEST_SKIP() << "fanotify permission events unavailable: " << (rig).interceptor.error()

// Takes every free block of the file system into `fd` (root may use the
// reserved blocks too), and commits so that statfs sees it.
void FillUp(int fd) {
  off_t offset = 0;
  for (const off_t chunk : {off_t{1} << 20, off_t{64} << 10, off_t{4} << 10, off_t{1} << 10}) {
    while (::fallocate(fd, 0, offset, chunk) == 0) offset += chunk;
  }
  ::fsync(fd);
}

TEST(DiskFault, FileSystemFillsUpAfterTheFreeSpaceGuard) {
  TempDir dir;
  MOUNT_LOOP_OR_SKIP(loop, dir);
  // Opened before the interceptor watches, so that filling it opens nothing.
  const std::string filler_path = loop->mount_point() + "/filler";
  struct Filler {
    int fd;
    ~Filler() {
      if (fd >= 0) ::close(fd);  // before the unmount, on every path
    }
  } filler_file{::open(filler_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)};
  const int filler = filler_file.fd;
  ASSERT_GE(filler, 0) << std::strerror(errno);
  DiskFaultRig rig(dir, *loop);
  INTERCEPT_OR_SKIP(rig);
  rig.interceptor.Arm(rig.daemon.process().pid(), [&] { FillUp(filler); });

  // The guard passed, then the disk filled: the reservation of the scratch
  // file fails with ENOSPC, a counted no_space failure.
  ASSERT_TRUE(rig.daemon.WaitFor(Failures("no_space"), 1, kPatience)) << rig.daemon.process().Stderr();
  EXPECT_EQ(rig.interceptor.fired(), 1);
  EXPECT_EQ(rig.daemon.Value(kSuccess), 0);
  EXPECT_THAT(ScratchFilesUnder(rig.data), ::testing::IsEmpty());
  EXPECT_THAT(rig.daemon.process().Stderr(), HasSubstr("No space left on device"));
  // Later runs: the guard sees the full disk and skips, still cleanly.
  ASSERT_TRUE(rig.daemon.WaitFor("hostperf_probe_skipped_total{probe=\"disk\",reason=\"no_space\"}", 1, kPatience))
      << rig.daemon.process().Stderr();
  rig.ExpectServing();
  EXPECT_THAT(ScratchFilesUnder(rig.data), ::testing::IsEmpty());

  // Space back: the probe succeeds again.
  ASSERT_EQ(::ftruncate(filler, 0), 0);
  ::fsync(filler);
  ASSERT_TRUE(rig.WaitForSuccess()) << rig.daemon.process().Stderr();
  rig.StopAndExpectClean(loop->mount_point());
}

TEST(DiskFault, DirectoryRenamedOrRemovedMidRun) {
  TempDir dir;
  MOUNT_LOOP_OR_SKIP(loop, dir);
  DiskFaultRig rig(dir, *loop);
  INTERCEPT_OR_SKIP(rig);
  const std::string moved = loop->mount_point() + "/moved";

  // Renamed while the probe creates its files: the probe works through its
  // directory descriptor, so it finishes in (and cleans up) the moved
  // directory; the next runs find no directory.
  rig.interceptor.Arm(rig.daemon.process().pid(), [&] { fs::rename(rig.data, moved); });
  ASSERT_TRUE(rig.daemon.WaitFor(Failures("bad_directory"), 1, kPatience)) << rig.daemon.process().Stderr();
  EXPECT_EQ(rig.interceptor.fired(), 1);
  EXPECT_EQ(rig.daemon.Value(kSuccess), 0);
  EXPECT_THAT(rig.daemon.process().Stderr(), HasSubstr("does not exist"));
  EXPECT_GT(rig.daemon.Value("hostperf_probe_last_success_timestamp_seconds{probe=\"disk\"}"), 0);
  EXPECT_EQ(rig.OtherFailures("bad_directory"), 0);
  EXPECT_THAT(ScratchFilesUnder(loop->mount_point()), ::testing::IsEmpty());
  const double failures = rig.daemon.Value(Failures("bad_directory"));
  ASSERT_TRUE(rig.daemon.WaitFor(Failures("bad_directory"), failures + 1, kPatience));  // keeps failing cleanly
  rig.ExpectServing();

  // Back: success again. Then removed (rm -rf) under the running probe: its
  // open files vanish with it; again the next runs fail and nothing is left.
  fs::rename(moved, rig.data);
  ASSERT_TRUE(rig.WaitForSuccess()) << rig.daemon.process().Stderr();
  const double before = rig.daemon.Value(Failures("bad_directory"));
  rig.interceptor.Arm(rig.daemon.process().pid(), [&] { fs::remove_all(rig.data); });
  ASSERT_TRUE(rig.daemon.WaitFor(Failures("bad_directory"), before + 1, kPatience)) << rig.daemon.process().Stderr();
  EXPECT_EQ(rig.interceptor.fired(), 2);
  EXPECT_EQ(rig.OtherFailures("bad_directory"), 0);
  rig.ExpectServing();
  EXPECT_THAT(ScratchFilesUnder(loop->mount_point()), ::testing::IsEmpty());
  fs::create_directory(rig.data);
  ASSERT_TRUE(rig.WaitForSuccess()) << rig.daemon.process().Stderr();
  rig.StopAndExpectClean(loop->mount_point());
}

TEST(DiskFault, DirectoryBecomesReadOnlyMidRun) {
  TempDir dir;
  MOUNT_LOOP_OR_SKIP(loop, dir);
  DiskFaultRig rig(dir, *loop);
  INTERCEPT_OR_SKIP(rig);
  // `mount -o remount,ro` is refused (EBUSY) while the probe holds a file
  // open for writing, so the directory is covered by a read-only bind mount
  // of itself instead: the run in progress keeps its descriptors on the
  // writable mount; every later run meets the read-only one.
  struct BindMount {
    std::string path;
    bool mounted = false;
    ~BindMount() {
      if (mounted) LoopFileSystem::Unmount(path);
    }
  } bind{rig.data};
  std::string bind_error;
  rig.interceptor.Arm(rig.daemon.process().pid(), [&] {
    if (::mount(rig.data.c_str(), rig.data.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      bind_error = std::strerror(errno);
      return;
    }
    bind.mounted = true;
    if (::mount(nullptr, rig.data.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      bind_error = std::string("remount ro: ") + std::strerror(errno);
    }
  });
  ASSERT_TRUE(rig.daemon.WaitFor(Failures("permission_denied"), 1, kPatience))
      << bind_error << rig.daemon.process().Stderr();
  EXPECT_TRUE(bind_error.empty()) << bind_error;
  EXPECT_EQ(rig.daemon.Value(kSuccess), 0);
  EXPECT_THAT(rig.daemon.process().Stderr(), HasSubstr("is not writable"));
  EXPECT_GT(rig.daemon.Value("hostperf_probe_last_success_timestamp_seconds{probe=\"disk\"}"), 0);
  EXPECT_EQ(rig.OtherFailures("permission_denied"), 0);
  const double failures = rig.daemon.Value(Failures("permission_denied"));
  ASSERT_TRUE(rig.daemon.WaitFor(Failures("permission_denied"), failures + 1, kPatience));
  // The read-only directory's own success is 0, its reason is
  // counted for it, and its last good throughput (205 MB/s before) is gone.
  const std::string label = "directory=\"" + rig.data + "\"";
  EXPECT_EQ(rig.daemon.Value("hostperf_disk_directory_success{" + label + "}"), 0);
  EXPECT_GE(rig.daemon.Value("hostperf_disk_directory_failures_total{" + label + ",reason=\"permission_denied\"}"), 2);
  EXPECT_THAT(rig.daemon.Metrics(), Not(HasSubstr("hostperf_disk_throughput_bytes_per_second{" + label)));
  EXPECT_THAT(rig.daemon.Metrics(), Not(HasSubstr("hostperf_disk_seeks_per_second{" + label)));
  rig.ExpectServing();
  EXPECT_THAT(ScratchFilesUnder(loop->mount_point()), ::testing::IsEmpty());

  LoopFileSystem::Unmount(rig.data);
  bind.mounted = false;
  ASSERT_TRUE(rig.WaitForSuccess()) << rig.daemon.process().Stderr();
  EXPECT_EQ(rig.daemon.Value("hostperf_disk_directory_success{" + label + "}"), 1);
  EXPECT_GT(rig.daemon.Value("hostperf_disk_throughput_bytes_per_second{" + label + ",test=\"Read\"}"), 0);
  rig.StopAndExpectClean(loop->mount_point());
}

// The alert on bad blocks is increase(hostperf_disk_verify_errors_total[1h])
// > 0, which cannot see a series that first appears at 1: each configured
// directory's counter is there at 0 before the probe first runs.
TEST(DiskFault, VerifyErrorCounterIsAlertReadyBeforeTheFirstRun) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  fs::create_directory(data);
  FaultDaemon daemon(DiskConfig(dir, data, "1h"));
  const std::string metrics = daemon.Metrics();
  EXPECT_EQ(Sample(metrics, "hostperf_disk_verify_errors_total{directory=\"" + data + "\"}"), 0.0) << metrics;
}

// Flips a byte in the second block of `path` once the probe has written it
// (the first block starts with the block magic). True if it did.
bool CorruptWrittenBlock(const std::string& path, std::size_t block_size) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  std::byte head[8];
  bool corrupted = false;
  if (::pread(fd, head, sizeof(head), 0) == static_cast<ssize_t>(sizeof(head)) && probes::disk::HasBlockMagic(head)) {
    const off_t at = static_cast<off_t>(block_size + block_size / 2);
    unsigned char byte = 0;
    if (::pread(fd, &byte, 1, at) == 1) {
      byte ^= 0x5a;
      corrupted = ::pwrite(fd, &byte, 1, at) == 1 && ::fsync(fd) == 0;
    }
  }
  ::close(fd);
  return corrupted;
}

// A real run of the disk probe (O_DIRECT on ext4) whose block is altered on
// disk between the Write test and the read-back: the probe's after_test seam
// is where the test steps in.
TEST(DiskFault, BlockCorruptedOnDiskBetweenWriteAndReadBack) {
  TempDir dir;
  MOUNT_LOOP_OR_SKIP(loop, dir);
  const std::string data = loop->mount_point() + "/data";
  fs::create_directory(data);
  constexpr std::size_t kBlock = 64 * 1024;

  prometheus::Registry registry;
  probes::ProbeDeps deps;
  deps.registry = &registry;
  deps.state_directory = dir.path() + "/state";
  bool corrupt = false;
  std::vector<std::string> corrupted;
  probes::disk::DiskProbeSeams seams;
  seams.after_test = [&](const std::string&, std::string_view) {
    if (!corrupt || !corrupted.empty()) return;
    for (const auto& file : ScratchFilesUnder(data)) {
      if (CorruptWrittenBlock(file, kBlock)) corrupted.push_back(file);
    }
  };
  const auto probe = probes::disk::CreateDiskProbe(deps, std::move(seams));
  auto config = probes::DefaultConfig();
  auto& disk = config.EditSettings<probes::disk::DiskProbeConfig>();
  disk.directories = {data};
  disk.bytes_per_run = 1024 * 1024;
  disk.max_buffer_size = kBlock;
  disk.reserve = 1024;
  std::atomic<bool> cancel{false};
  const auto run = [&](bool corrupt_this_run) {
    corrupt = corrupt_this_run;
    probes::ScheduledContext ctx = probes::MakeScheduledContext(config, "disk");
    ctx.cancel = &cancel;
    return probe->RunScheduled(ctx);
  };
  const std::string verify_errors = "hostperf_disk_verify_errors_total{directory=\"" + data + "\"}";
  const auto exposition = [&] { return prometheus::TextSerializer().Serialize(registry.Collect()); };

  const auto bad = run(true);
  ASSERT_EQ(corrupted.size(), 1u) << "the probe wrote no block to corrupt";
  EXPECT_EQ(bad.status, probes::ProbeOutcome::Status::kFailure) << bad.reason << ": " << bad.message;
  EXPECT_EQ(bad.reason, "verify_error");
  EXPECT_THAT(bad.message, HasSubstr("crc_mismatch in block 1 (offset 65536) of " + corrupted[0]));
  EXPECT_EQ(bad.result["directories"][0]["verify_errors"], 1) << bad.result.dump();
  EXPECT_EQ(Sample(exposition(), verify_errors), 1.0) << exposition();
  EXPECT_THAT(ScratchFilesUnder(data), ::testing::IsEmpty());

  // The next run over the same directory is clean; the counter keeps its count.
  const auto good = run(false);
  EXPECT_EQ(good.status, probes::ProbeOutcome::Status::kSuccess) << good.reason << ": " << good.message;
  EXPECT_EQ(Sample(exposition(), verify_errors), 1.0);
  EXPECT_THAT(ScratchFilesUnder(data), ::testing::IsEmpty());
}

// gpcheckperf's disk test as `hostperf check -r d` runs it, on two file
// systems of their own: exactly -S bytes over both, both written at the same
// time (their intervals overlap), then both read back at the same time.
TEST(CheckDiskOnLoopFileSystems, BothWrittenAtOnceWithExactlyTheTotal) {
  TempDir first_dir;
  TempDir second_dir;
  MOUNT_LOOP_OR_SKIP(first, first_dir);
  MOUNT_LOOP_OR_SKIP(second, second_dir);
  const std::string config = first_dir.Write("hostperf.toml", "[probes.disk]\nreserve = \"1mb\"\n");
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              {"--config.file=" + config, "check", "-v", "-r", "d", "-d", first->mount_point(), "-d",
                               second->mount_point(), "-S", "32mb", "-B", "32kb", "--json"},
                              seconds(120));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const auto document = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_TRUE(document.is_object()) << run.out;
  const nlohmann::json& disk = document["hosts"][0]["disk"];
  const double total = 32 << 20;
  EXPECT_EQ(disk["write"]["bytes"].get<double>(), total);
  EXPECT_EQ(disk["read"]["bytes"].get<double>(), total);
  ASSERT_EQ(disk["directories"].size(), 2u) << disk.dump();
  const nlohmann::json& a = disk["directories"][0];
  const nlohmann::json& b = disk["directories"][1];
  EXPECT_EQ(a["write"]["bytes"].get<double>() + b["write"]["bytes"].get<double>(), total);
  EXPECT_EQ(a["write"]["bytes"], b["write"]["bytes"]);
  const auto at = [](const nlohmann::json& dir, const char* pass, const char* key) {
    return dir[pass][key].get<double>();
  };
  for (const char* pass : {"write", "read"}) {
    SCOPED_TRACE(pass);
    // Each started before the other ended: the two ran at the same time.
    EXPECT_LT(at(a, pass, "started_unix_seconds"), at(b, pass, "finished_unix_seconds"));
    EXPECT_LT(at(b, pass, "started_unix_seconds"), at(a, pass, "finished_unix_seconds"));
  }
  const double writes_done = std::max(at(a, "write", "finished_unix_seconds"), at(b, "write", "finished_unix_seconds"));
  EXPECT_GE(at(a, "read", "started_unix_seconds"), writes_done - 0.001);
  EXPECT_GE(at(b, "read", "started_unix_seconds"), writes_done - 0.001);
  // The host's bandwidth is the total over the pass's wall time.
  const double wall = std::max(at(a, "write", "finished_unix_seconds"), at(b, "write", "finished_unix_seconds")) -
                      std::min(at(a, "write", "started_unix_seconds"), at(b, "write", "started_unix_seconds"));
  EXPECT_NEAR(disk["write"]["seconds"].get<double>(), wall, 0.05);
  EXPECT_THAT(run.err, HasSubstr("[Info] disk test on "));
  for (const auto* loop : {first.get(), second.get()}) {
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(loop->mount_point())) {
      if (entry.path().filename() != "lost+found") left.push_back(entry.path().string());
    }
    EXPECT_TRUE(left.empty()) << left.front();
  }
}

}  // namespace
}  // namespace hostperf::testing
