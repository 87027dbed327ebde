// Attribution inside a host, on this machine's kernel: a multi-device btrfs
// (Debian's btrfs-progs) over four loop devices, one member slowed for the
// probe's cgroup (tests/integration/btrfs_array_fixture.sh says how), and the
// disk probe must name that member and only it, in `hostperf io` and in the
// daemon's scheduled runs. This kernel has no md driver and no device-mapper:
// md and dm stacks are covered by the fixture-tree unit tests
// (tests/probes/disk/disk_members_test.cc) only. Skipped with the reason where the
// host cannot (not root, no btrfs, no cgroup v1 blkio).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

const std::string kFixture = std::string(HOSTPERF_SOURCE_DIR) + "/tests/integration/btrfs_array_fixture.sh";

std::optional<double> Sample(const std::string& exposition, const std::string& series) {
  std::istringstream lines(exposition);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

// The array for one test; torn down whatever happened.
class SlowMemberArray {
 public:
  explicit SlowMemberArray(const TempDir& dir) : dir_(dir.path() + "/array-rig") {
    const CommandResult started = RunCommand(kFixture, {"start", dir_}, seconds(120));
    status_ = started.status;
    why_ = started.out + started.err;
    std::istringstream lines(ReadText(dir_ + "/env"));
    for (std::string line; std::getline(lines, line);) {
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string value = line.substr(eq + 1);
      if (value.size() >= 2 && value.front() == '"') value = value.substr(1, value.size() - 2);
      env_[line.substr(0, eq)] = value;
    }
  }
  ~SlowMemberArray() { (void)RunCommand(kFixture, {"stop", dir_}, seconds(60)); }

  int status() const { return status_; }
  const std::string& why() const { return why_; }
  std::string operator[](const std::string& key) const { return env_.contains(key) ? env_.at(key) : ""; }
  // `argv` run inside the throttled cgroup (so the member is slow for it).
  std::vector<std::string> InCgroup(const std::vector<std::string>& argv) const {
    std::string command = "echo $$ > " + (*this)["CGROUP"] + "/cgroup.procs && exec";
    for (const auto& arg : argv) command += " '" + arg + "'";
    return {"-c", command};
  }

 private:
  std::string dir_;
  int status_ = -1;
  std::string why_;
  std::map<std::string, std::string> env_;
};

#define START_ARRAY_OR_SKIP(array, dir)                      \
  SlowMemberArray array(dir);                                \
  if ((array).status() == 77) GTEST_SKIP() << (array).why(); \
  ASSERT_EQ((array).status(), 0) << (array).why();           \
  ASSERT_FALSE((array)["SLOW_MEMBER"].empty()) << (array).why()

TEST(DiskMembers, IoNamesTheSlowMemberAndOnlyIt) {
  TempDir dir;
  START_ARRAY_OR_SKIP(array, dir);
  const std::string config = dir.Write("cli.toml", "[probes.disk]\nreserve = \"1mb\"\n");
  const std::string slow = array["SLOW_MEMBER"];
  const CommandResult run =
      RunCommand("/bin/sh",
                 array.InCgroup({HOSTPERF_CLI_BIN, "--config.file=" + config, "io", "--duration=3s", "--thread-count=1",
                                 "--data-size=64mb", "--json", array["ARRAY"]}),
                 seconds(120));
  ASSERT_EQ(run.status, 0) << run.err;
  const json result = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(result.is_object()) << run.out;
  const json& report = result["directories"][0];
  EXPECT_EQ(report.value("array_kind", ""), "btrfs") << report.dump(2);
  ASSERT_EQ(report["members"].size(), 4u) << report.dump(2);
  // Every finding names the slowed member; reads at least.
  ASSERT_FALSE(report["slow_members"].empty()) << report.dump(2);
  for (const auto& finding : report["slow_members"]) {
    EXPECT_THAT(finding.get<std::string>(), HasSubstr("member " + slow + " serves ")) << report.dump(2);
  }
  EXPECT_THAT(report["slow_members"][0].get<std::string>(), HasSubstr("reads"));
  for (const json& member : report["members"]) {
    const std::string device = member.value("device", "");
    if (device == slow) {
      // Its physical disk: the loop device its file lives on.
      EXPECT_EQ(member["leaves"], array["BACKING"]) << member.dump();
      EXPECT_GE(member.value("read_ratio", 0.0), 2.0) << member.dump();
    } else {
      EXPECT_EQ(member["leaves"], device) << member.dump();
      EXPECT_LT(member.value("read_ratio", 99.0), 2.0) << member.dump();
    }
  }
}

TEST(DiskMembers, ScheduledRunsExportEachMembersServiceTime) {
  TempDir dir;
  START_ARRAY_OR_SKIP(array, dir);
  const std::string slow = array["SLOW_MEMBER"];
  const std::string data = array["ARRAY"];
  const std::string config = dir.Write(
      "c.toml", "state_directory = \"" + dir.path() +
                    "/state\"\n[scheduler]\nfirst_run_splay = \"1s\"\n"
                    "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n[probes.net]\nenabled = false\n"
                    "[probes.disk]\ninterval = \"10s\"\ntimeout = \"10s\"\ndirectories = [\"" +
                    data + "\"]\nbytes_per_run = \"32mb\"\nreserve = \"1mb\"\n");
  ChildProcess daemon("/bin/sh", array.InCgroup({HOSTPERF_EXPORTER_BIN, "--config.file=" + config,
                                                 "--web.listen-address=127.0.0.1:0"}));
  const int port = daemon.ListeningPort();
  ASSERT_GT(port, 0) << daemon.Stderr();
  const std::string ratio = "hostperf_disk_member_service_ratio{device=\"";
  const auto series = [&](const std::string& device, const std::string& op) {
    return ratio + device + "\",directory=\"" + data + "\",op=\"" + op + "\"}";
  };
  std::string metrics;
  for (const auto until = std::chrono::steady_clock::now() + seconds(90); std::chrono::steady_clock::now() < until;) {
    const auto reply = HttpRequest(port, "GET", "/metrics");
    metrics = reply ? reply->body : "";
    if (Sample(metrics, series(slow, "read"))) break;
    std::this_thread::sleep_for(milliseconds(500));
  }
  ASSERT_TRUE(Sample(metrics, series(slow, "read")).has_value()) << metrics << daemon.Stderr();
  EXPECT_GE(*Sample(metrics, series(slow, "read")), 2.0);
  EXPECT_EQ(Sample(metrics, "hostperf_disk_members{directory=\"" + data + "\"}"), 4.0);
  std::istringstream members(array["MEMBERS"]);
  for (std::string device; members >> device;) {
    EXPECT_TRUE(Sample(metrics, "hostperf_disk_member_bytes_total{device=\"" + device + "\",directory=\"" + data +
                                    "\",op=\"read\"}")
                    .has_value())
        << device;
    if (device == slow) continue;
    EXPECT_LT(Sample(metrics, series(device, "read")).value_or(99), 2.0) << device << "\n" << metrics;
  }
  EXPECT_THAT(metrics, HasSubstr("hostperf_disk_member_info{device=\"" + slow + "\",directory=\"" + data +
                                 "\",leaves=\"" + array["BACKING"] + "\""));
  EXPECT_THAT(daemon.Stderr(), HasSubstr("member " + slow + " serves reads"));
}

}  // namespace
}  // namespace hostperf::testing
