// The disk probe through the real binaries: `hostperf io` as vioperf, and
// scheduled runs in hostperf_exporter, on real (and small, full) file systems.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::Optional;

// Files in `dir` (the probe must leave none behind).
std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) names.push_back(entry.path().filename().string());
  return names;
}

// The device_class of directory_info's series whose other labels are
// `rest` (`directory="...",role="..."`) and whose value is 1.
std::optional<std::string> DeviceClass(const std::string& exposition, const std::string& rest) {
  const std::string head = "hostperf_disk_directory_info{device_class=\"";
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(head, 0) != 0) continue;
    const auto end = line.find('"', head.size());
    if (end != std::string::npos && line.substr(end + 1) == "," + rest + "} 1") {
      return line.substr(head.size(), end - head.size());
    }
  }
  return std::nullopt;
}

std::optional<double> Sample(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

// A config file whose disk probe tests `data_dir` (cpu probe off, so that
// only the disk probe runs).
std::string DiskConfig(const TempDir& dir, const std::string& data_dir, const std::string& extra = "",
                       const std::string& bytes_per_run = "1mb") {
  return dir.Write("c.toml", "state_directory = \"" + dir.path() +
                                 "/state\"\n"
                                 "[scheduler]\nfirst_run_splay = \"1s\"\n"
                                 "[probes.cpu]\nenabled = false\n"
                                 "[probes.memory]\nenabled = false\n"
                                 "[probes.disk]\ninterval = \"4s\"\ntimeout = \"4s\"\n"
                                 "directories = [\"" +
                                 data_dir +
                                 "\"]\n"
                                 "bytes_per_run = \"" +
                                 bytes_per_run + "\"\nmax_buffer_size = \"64kb\"\nreserve = \"1kb\"\n" + extra);
}

class Daemon {
 public:
  explicit Daemon(const std::string& config)
      : process_(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"}) {}
  int Port() {
    if (port_ == 0) port_ = process_.ListeningPort();
    return port_;
  }
  std::string Metrics() {
    const auto reply = HttpRequest(Port(), "GET", "/metrics");
    return reply ? reply->body : "";
  }
  bool WaitFor(const std::string& series, double at_least, seconds timeout) {
    for (const auto until = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < until;) {
      if (Sample(Metrics(), series).value_or(-1) >= at_least) return true;
      if (process_.Wait(milliseconds(0))) return false;
      std::this_thread::sleep_for(milliseconds(200));
    }
    return false;
  }
  ChildProcess& process() { return process_; }

 private:
  ChildProcess process_;
  int port_ = 0;
};

// `hostperf io` with a config that keeps a tiny reserve; adds
// --disable-direct-io when the file system refuses O_DIRECT.
CommandResult Io(const TempDir& dir, std::vector<std::string> args) {
  const std::string config = dir.Write("cli.toml", "[probes.disk]\nreserve = \"1kb\"\n");
  args.insert(args.begin(), {"--config.file=" + config, "io"});
  auto result = RunCommand(HOSTPERF_CLI_BIN, args, seconds(60));
  if (result.status != 0 && result.err.find("direct_io_unsupported") != std::string::npos) {
    args.insert(args.begin() + 2, "--disable-direct-io");
    result = RunCommand(HOSTPERF_CLI_BIN, args, seconds(60));
  }
  return result;
}

TEST(DiskCli, FullRunPrintsVioperfTableAndWritesJsonLog) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  fs::create_directory(data);
  const std::string log = dir.path() + "/log.json";
  const auto result = Io(dir, {"--duration=2s", "--log-interval=300ms", "--data-size=512kb", "--thread-count=2",
                               "--max-buffer-size=64kb", "--log-file=" + log, data});
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("The minimum required I/O is 20 MB/s read and write per physical processor core"));
  EXPECT_THAT(result.out,
              ::testing::ContainsRegex("Using (direct|buffered) io \\(buffer size=65536, alignment=[0-9]+\\) "
                                       "for directory \"" +
                                       data + "\""));
  EXPECT_THAT(result.out, HasSubstr("counter value (10 sec avg)"));
  for (const char* test : {"Write    | ", "ReWrite  | ", "Read     | ", "SkipRead | "}) {
    EXPECT_THAT(result.out, HasSubstr(std::string(test) + data)) << test;
  }
  EXPECT_THAT(result.out,
              ::testing::ContainsRegex("ReWrite  \\| [^|]+\\| \\(MB-read\\+MB-write\\)/s +\\| [0-9.]+\\+[0-9.]+"));
  EXPECT_THAT(result.out, HasSubstr("| seeks/s"));

  const auto json = nlohmann::json::parse(ReadText(log), nullptr, false);
  ASSERT_FALSE(json.is_discarded()) << ReadText(log);
  EXPECT_EQ(json["status"], "ok");
  EXPECT_GE(json["rows"].size(), 4u);
  EXPECT_EQ(json["thread_count"], 2);
  EXPECT_EQ(json["directories"][0]["verify_errors"], 0);
  EXPECT_TRUE(Files(data).empty());
}

TEST(DiskCli, CondensedLogAndDefaultDirectoryAndName) {
  TempDir dir;
  // No DIR: the current directory, and the log lands there too.
  const std::string config = dir.Write("cli.toml", "[probes.disk]\nreserve = \"1kb\"\ndisable_direct_io = true\n");
  const auto result = RunCommand("/bin/sh",
                                 {"-c", "cd " + dir.path() + " && " + HOSTPERF_CLI_BIN + " --config.file=" + config +
                                            " io --duration=1s --log-interval=1s --data-size=64kb --thread-count=1"
                                            " --max-buffer-size=16kb --condense-log"},
                                 seconds(60));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_THAT(result.out, HasSubstr("Using buffered io (buffer size=16384"));
  std::string log;
  for (const auto& name : Files(dir.path())) {
    if (std::regex_match(name, std::regex(R"(results\d{8}-\d{6}\.json)"))) log = name;
  }
  ASSERT_FALSE(log.empty()) << ::testing::PrintToString(Files(dir.path()));
  std::istringstream lines(ReadText(dir.path() + "/" + log));
  std::vector<nlohmann::json> entries;
  for (std::string line; std::getline(lines, line);) entries.push_back(nlohmann::json::parse(line));
  ASSERT_GE(entries.size(), 6u);  // run, >= 4 rows, summary
  EXPECT_EQ(entries.front()["kind"], "run");
  EXPECT_EQ(entries.back()["status"], "ok");
  for (const auto& name : Files(dir.path())) EXPECT_EQ(name.find("hostperf-disk-"), std::string::npos) << name;
}

TEST(DiskCli, BadInputExitsNonZeroWithTheReason) {
  TempDir dir;
  const auto option = RunCommand(HOSTPERF_CLI_BIN, {"io", "--duration=soon"}, seconds(10));
  EXPECT_EQ(option.status, 2);
  EXPECT_THAT(option.err, HasSubstr("duration"));
  const auto missing =
      Io(dir, {"--duration=1s", "--data-size=64kb", "--log-file=" + dir.path() + "/l.json", dir.path() + "/missing"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr("bad_directory"));
  EXPECT_THAT(missing.err, HasSubstr("does not exist"));
  const auto help = RunCommand(HOSTPERF_CLI_BIN, {"io", "--help"}, seconds(10));
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("--max-buffer-size"));
}

TEST(DiskCli, DebugLogsEveryFileAndTest) {
  TempDir dir;
  const auto quiet = Io(dir, {"--duration=1s", "--data-size=256kb", "--max-buffer-size=64kb", "--thread-count=1",
                              "--log-file=" + dir.path() + "/q.json", dir.path()});
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_THAT(quiet.err, Not(HasSubstr("created")));
  const auto debug = Io(dir, {"--debug", "--duration=1s", "--data-size=256kb", "--max-buffer-size=64kb",
                              "--thread-count=1", "--log-file=" + dir.path() + "/d.json", dir.path()});
  ASSERT_EQ(debug.status, 0) << debug.err;
  EXPECT_THAT(debug.err, HasSubstr("disk: created " + dir.path() + "/"));
  EXPECT_THAT(debug.err, HasSubstr("blocks of 65536"));
  for (const char* test : {"Write", "ReWrite", "Read", "SkipRead"}) {
    EXPECT_THAT(debug.err, HasSubstr(std::string("disk: ") + test + " in " + dir.path() + ": ")) << test;
  }
  EXPECT_THAT(debug.err, HasSubstr("0 bad block(s)"));
}

TEST(DiskCli, SigtermMidRunLeavesNoFiles) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  fs::create_directory(data);
  const std::string config = dir.Write("cli.toml", "[probes.disk]\nreserve = \"1kb\"\ndisable_direct_io = true\n");
  ChildProcess io(HOSTPERF_CLI_BIN,
                  {"--config.file=" + config, "io", "--duration=60s", "--log-interval=1s", "--data-size=4mb",
                   "--thread-count=1", "--max-buffer-size=64kb", "--log-file=" + dir.path() + "/log.json", data});
  // Wait until the run has its files and has reported a row.
  bool running = false;
  for (int i = 0; i < 300 && !running; ++i) {
    running = !Files(data).empty() && io.Stdout().find("| MB/s") != std::string::npos;
    if (!running) std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(running) << io.Stdout() << io.Stderr();
  io.Signal(SIGTERM);
  const auto status = io.Wait(seconds(20));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 1);
  EXPECT_THAT(io.Stderr(), HasSubstr("cancelled"));
  EXPECT_TRUE(Files(data).empty()) << ::testing::PrintToString(Files(data));
  EXPECT_THAT(ReadText(dir.path() + "/log.json"), HasSubstr("\"reason\": \"cancelled\""));
}

TEST(DiskDaemon, ScheduledRunsExportMetrics) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  fs::create_directory(data);
  Daemon daemon(DiskConfig(dir, data));
  ASSERT_TRUE(daemon.WaitFor("hostperf_probe_runs_total{probe=\"disk\"}", 2, seconds(60))) << daemon.process().Stderr();
  const std::string metrics = daemon.Metrics();
  EXPECT_EQ(Sample(metrics, "hostperf_probe_success{probe=\"disk\"}"), 1.0) << daemon.process().Stderr();
  const std::string label = "directory=\"" + data + "\"";
  EXPECT_GE(Sample(metrics, "hostperf_disk_written_bytes_total{" + label + "}").value_or(0), 2.0 * 1024 * 1024);
  EXPECT_EQ(Sample(metrics, "hostperf_disk_verify_errors_total{" + label + "}"), 0.0);
  EXPECT_GT(Sample(metrics, "hostperf_disk_throughput_bytes_per_second{" + label + ",test=\"Read\"}").value_or(0), 0);
  EXPECT_GT(Sample(metrics, "hostperf_disk_seeks_per_second{" + label + "}").value_or(0), 0);
  EXPECT_GT(Sample(metrics, "hostperf_disk_op_latency_seconds_count{" + label + ",op=\"write\"}").value_or(0), 0);
  EXPECT_TRUE(Files(data).empty());
  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(20)), 0);
  EXPECT_TRUE(Files(data).empty());
}

// Two directories with roles, then a reload that drops one: every series of
// the dropped directory leaves /metrics, the kept one's stay, and the failure
// counters exist at 0 from start-up.
TEST(DiskDaemon, ReloadDropsARemovedDirectorysSeries) {
  TempDir dir;
  const std::string a = dir.path() + "/a";
  const std::string b = dir.path() + "/b";
  fs::create_directory(a);
  fs::create_directory(b);
  const auto config = [&](const std::string& directories, const std::string& roles) {
    return dir.Write("c.toml", "state_directory = \"" + dir.path() +
                                   "/state\"\n"
                                   "[scheduler]\nfirst_run_splay = \"1s\"\n"
                                   "[probes.cpu]\nenabled = false\n"
                                   "[probes.memory]\nenabled = false\n"
                                   "[probes.net]\nenabled = false\n"
                                   "[probes.disk]\ninterval = \"3s\"\ntimeout = \"3s\"\n"
                                   "directories = [" +
                                   directories + "]\ndirectory_roles = {" + roles +
                                   "}\n"
                                   "bytes_per_run = \"1mb\"\nmax_buffer_size = \"64kb\"\nreserve = \"1kb\"\n"
                                   "disable_direct_io = true\n");
  };
  Daemon daemon(config("\"" + a + "\", \"" + b + "\"", "\"" + b + "\" = \"wal\""));
  const std::string label_a = "directory=\"" + a + "\"";
  const std::string label_b = "directory=\"" + b + "\"";
  ASSERT_TRUE(daemon.WaitFor("hostperf_probe_runs_total{probe=\"disk\"}", 0, seconds(30))) << daemon.process().Stderr();
  const std::string at_start = daemon.Metrics();
  // device_class, read from this machine's /sys: some [a-z0-9_] class.
  EXPECT_THAT(DeviceClass(at_start, label_a + ",role=\"data\""), Optional(MatchesRegex("[a-z0-9_]+_[a-z0-9_]+")))
      << at_start;
  EXPECT_THAT(DeviceClass(at_start, label_b + ",role=\"wal\""), Optional(MatchesRegex("[a-z0-9_]+")));
  for (const std::string reason : {"verify_error", "io_error", "timeout", "internal_error"}) {
    EXPECT_TRUE(Sample(at_start, "hostperf_probe_failures_total{probe=\"disk\",reason=\"" + reason + "\"}").has_value())
        << reason;
  }
  EXPECT_TRUE(Sample(at_start, "hostperf_probe_skipped_total{probe=\"disk\",reason=\"no_space\"}").has_value());

  ASSERT_TRUE(daemon.WaitFor("hostperf_disk_written_bytes_total{" + label_b + "}", 1, seconds(60)))
      << daemon.process().Stderr();
  ASSERT_THAT(daemon.Metrics(), HasSubstr("hostperf_disk_op_latency_seconds_count{" + label_b));

  config("\"" + a + "\"", "");
  daemon.process().Signal(SIGHUP);
  bool dropped = false;
  for (const auto until = std::chrono::steady_clock::now() + seconds(20); !dropped;) {
    dropped = daemon.Metrics().find(label_b) == std::string::npos;
    if (std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(dropped) << daemon.Metrics();
  // Later runs measure only a; b stays gone.
  const double runs = Sample(daemon.Metrics(), "hostperf_probe_runs_total{probe=\"disk\"}").value_or(0);
  ASSERT_TRUE(daemon.WaitFor("hostperf_probe_runs_total{probe=\"disk\"}", runs + 1, seconds(30)));
  const std::string after = daemon.Metrics();
  EXPECT_THAT(after, Not(HasSubstr(label_b)));
  EXPECT_EQ(Sample(after, "hostperf_disk_verify_errors_total{" + label_a + "}"), 0.0);
  EXPECT_EQ(DeviceClass(after, label_a + ",role=\"data\""), DeviceClass(at_start, label_a + ",role=\"data\""));
  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(20)), 0);
}

// A directory whose runs all fail once kept its last good
// throughput, and only the first failing directory's reason was counted.
// Now each directory has its own success, its own reasons, and no stale
// figures.
TEST(DiskDaemon, AFailingDirectoryDropsItsFiguresAndCountsItsOwnReason) {
  TempDir dir;
  const std::string a = dir.path() + "/a";
  const std::string b = dir.path() + "/b";
  fs::create_directory(a);
  fs::create_directory(b);
  Daemon daemon(dir.Write("c.toml", "state_directory = \"" + dir.path() +
                                        "/state\"\n"
                                        "[scheduler]\nfirst_run_splay = \"1s\"\n"
                                        "[probes.cpu]\nenabled = false\n"
                                        "[probes.memory]\nenabled = false\n"
                                        "[probes.net]\nenabled = false\n"
                                        "[probes.disk]\ninterval = \"2s\"\ntimeout = \"2s\"\n"
                                        "directories = [\"" +
                                        a + "\", \"" + b +
                                        "\"]\n"
                                        "bytes_per_run = \"512kb\"\nmax_buffer_size = \"64kb\"\nreserve = \"1kb\"\n"
                                        "disable_direct_io = true\n"));
  const std::string label_a = "directory=\"" + a + "\"";
  const std::string label_b = "directory=\"" + b + "\"";
  const std::string read_b = "hostperf_disk_throughput_bytes_per_second{" + label_b + ",test=\"Read\"}";
  ASSERT_TRUE(daemon.WaitFor(read_b, 1, seconds(60))) << daemon.process().Stderr();
  // The directory's success is set when all its tests are done, after Read's figure.
  EXPECT_TRUE(daemon.WaitFor("hostperf_disk_directory_success{" + label_b + "}", 1, seconds(60)));

  fs::remove_all(b);  // b fails from now on (bad_directory); a keeps working
  const std::string failed_b = "hostperf_disk_directory_failures_total{" + label_b + ",reason=\"bad_directory\"}";
  ASSERT_TRUE(daemon.WaitFor(failed_b, 1, seconds(60))) << daemon.process().Stderr();
  std::string m = daemon.Metrics();
  EXPECT_EQ(Sample(m, "hostperf_disk_directory_success{" + label_b + "}"), 0.0);
  EXPECT_EQ(Sample(m, read_b), std::nullopt) << "no stale figure for the failing directory";
  EXPECT_THAT(m, Not(HasSubstr("hostperf_disk_seeks_per_second{" + label_b)));
  EXPECT_EQ(Sample(m, "hostperf_disk_directory_success{" + label_a + "}"), 1.0);
  EXPECT_GT(Sample(m, "hostperf_disk_throughput_bytes_per_second{" + label_a + ",test=\"Read\"}").value_or(0), 0);

  // Both fail: each directory's reason is counted, not only the first's.
  fs::remove_all(a);
  const std::string failed_a = "hostperf_disk_directory_failures_total{" + label_a + ",reason=\"bad_directory\"}";
  ASSERT_TRUE(daemon.WaitFor(failed_a, 1, seconds(60))) << daemon.process().Stderr();
  const double b_before = Sample(daemon.Metrics(), failed_b).value_or(0);
  const double a_before = Sample(daemon.Metrics(), failed_a).value_or(0);
  ASSERT_TRUE(daemon.WaitFor(failed_a, a_before + 1, seconds(60)));
  m = daemon.Metrics();
  EXPECT_GT(Sample(m, failed_b).value_or(0), b_before) << "b (the second directory) is counted too";
  EXPECT_EQ(Sample(m, "hostperf_disk_directory_success{" + label_a + "}"), 0.0);
  EXPECT_EQ(Sample(m, "hostperf_disk_throughput_bytes_per_second{" + label_a + ",test=\"Read\"}"), std::nullopt);
  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(20)), 0);
}

std::vector<std::string> ScratchFiles(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& name : Files(dir)) {
    if (name.rfind("hostperf-disk-", 0) == 0) names.push_back(name);
  }
  return names;
}

// After kill -9 during a full run into a directory that
// is not in probes.disk.directories, its scratch files once survived restarts.
// Now every run records its directory in the state directory before it
// writes, and the next start-up cleans it. A leftover whose pid now belongs
// to a live unrelated process (pid reuse after a reboot) is still ours: the
// record names the boot and the process start time too.
TEST(DiskDaemon, KillDuringAFullRunElsewhereLeavesNothingAfterRestart) {
  TempDir dir;
  const std::string outside = dir.path() + "/outside";
  const std::string elsewhere = dir.path() + "/elsewhere";
  fs::create_directory(outside);
  fs::create_directory(elsewhere);
  const std::string token = "integration-token-0123456789";
  const std::string config =
      dir.Write("c.toml", "state_directory = \"" + dir.path() + "/state\"\n[api]\ntoken_file = \"" +
                              dir.Write("token", token + "\n") +
                              "\"\n"
                              "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
                              "[probes.net]\nenabled = false\n"
                              "[probes.disk]\nenabled = false\nreserve = \"1kb\"\ndirectories = [\"" +
                              dir.path() + "/configured\"]\n");
  const nlohmann::json body = {{"probes", {"disk"}},
                               {"duration", "60s"},
                               {"options",
                                {{"disk",
                                  {{"directories", {outside}},
                                   {"data_size", "4mb"},
                                   {"thread_count", 1},
                                   {"max_buffer_size", "64kb"},
                                   {"disable_direct_io", true}}}}}};
  {
    Daemon daemon(config);
    const auto reply =
        HttpRequest(daemon.Port(), "POST", "/api/v1/runs",
                    {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}}, body.dump());
    ASSERT_TRUE(reply && reply->status == 202) << (reply ? reply->body : "no reply") << daemon.process().Stderr();
    bool writing = false;
    for (int i = 0; i < 300 && !writing; ++i) {
      writing = !ScratchFiles(outside).empty();
      if (!writing) std::this_thread::sleep_for(milliseconds(100));
    }
    ASSERT_TRUE(writing) << daemon.process().Stderr();
    daemon.process().Signal(SIGKILL);
    ASSERT_TRUE(daemon.process().Wait(seconds(20)).has_value());
  }
  ASSERT_FALSE(ScratchFiles(outside).empty()) << "the crash left the run's files";

  // A leftover of an earlier boot whose pid is now a live, unrelated process.
  ChildProcess unrelated("/bin/sleep", {"120"});
  const std::string pid = std::to_string(unrelated.pid());
  const std::string ours = "hostperf-disk-" + pid + "-4242-0.dat";
  const std::string other_run = "hostperf-disk-" + pid + "-777-0.dat";  // not in any record: left alone
  const std::string preserved = "hostperf-preserved-" + pid + "-4242-1.dat";
  for (const auto& name : {ours, other_run, preserved}) std::ofstream(elsewhere + "/" + name).flush();
  fs::create_directories(dir.path() + "/state/disk-runs");
  std::ofstream(dir.path() + "/state/disk-runs/" + pid + "-4242.run")
      << "hostperf-disk-run 1\nboot_id 00000000-0000-4000-8000-000000000000\npid " << pid
      << "\nstart_time 1\nrun_id 4242\ndirectory " << elsewhere << "\n";

  Daemon restarted(config);
  ASSERT_GT(restarted.Port(), 0) << restarted.process().Stderr();  // start-up done
  EXPECT_THAT(ScratchFiles(outside), ::testing::IsEmpty()) << restarted.process().Stderr();
  const auto left = Files(elsewhere);
  EXPECT_THAT(left, Not(::testing::Contains(ours))) << "pid reused by a live process, still ours";
  EXPECT_THAT(left, ::testing::Contains(other_run));
  EXPECT_THAT(left, ::testing::Contains(preserved)) << "preserve_files keeps its files";
  EXPECT_TRUE(Files(dir.path() + "/state/disk-runs").empty()) << "records of cleaned runs are removed";
  unrelated.Signal(SIGKILL);
  restarted.process().Signal(SIGTERM);
  EXPECT_EQ(restarted.process().Wait(seconds(20)), 0);
}

// A size-limited tmpfs: the free-space guard skips with no_space, nothing is
// left behind, and the daemon keeps serving.
TEST(DiskDaemon, SmallFileSystemGivesNoSpace) {
  TempDir dir;
  const std::string mnt = dir.path() + "/small";
  fs::create_directory(mnt);
  if (::mount("hostperf-test", mnt.c_str(), "tmpfs", 0, "size=8m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs (" << std::strerror(errno) << "); needs root or CAP_SYS_ADMIN";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  // 32 MiB per run on 8 MiB.
  Daemon daemon(DiskConfig(dir, mnt, "disable_direct_io = true\n", "32mb"));
  ASSERT_TRUE(daemon.WaitFor("hostperf_probe_skipped_total{probe=\"disk\",reason=\"no_space\"}", 1, seconds(60)))
      << daemon.process().Stderr() << daemon.Metrics();
  EXPECT_TRUE(Files(mnt).empty()) << ::testing::PrintToString(Files(mnt));
  const auto healthy = HttpRequest(daemon.Port(), "GET", "/-/healthy");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);

  // The CLI on the same file system: a clear no_space failure, no files.
  const auto full = Io(dir, {"--disable-direct-io", "--duration=1s", "--data-size=16mb", "--thread-count=1",
                             "--log-file=" + dir.path() + "/l.json", mnt});
  EXPECT_EQ(full.status, 1);
  EXPECT_THAT(full.err, HasSubstr("no_space"));
  EXPECT_TRUE(Files(mnt).empty());
  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(20)), 0);
}

}  // namespace
}  // namespace hostperf::testing
