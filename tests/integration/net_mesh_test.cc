// Throughput among all hosts at once on this kernel, as root: four
// network namespaces joined by veth pairs to one bridge, a real
// hostperf_exporter responder in each, `hostperf net` coordinating from the
// root namespace. (a) All-to-all: every host sends to and receives from the
// three others in the same seconds. (b) One host's link shaped by tbf on both
// ends of its veth: that host's sent and received figures drop, the others'
// stay near the rate, and the findings name that host. (c) A host killed
// mid-test: the run ends within a bounded time with that host reported.
// (d) Only the orchestration key the daemons trust runs plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fault_harness.h"
#include "netns_harness.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr const char* kSecret = "net-mesh-test-shared-secret-0123456789abcdef";
constexpr int kHosts = 4;

class NetMeshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root for ip netns, bridges, veth and tc";
    if (Find("ip").empty() || Find("tc").empty()) GTEST_SKIP() << "needs iproute2 (ip, tc)";
    mesh_ = std::make_unique<Mesh>(kHosts);
    if (!mesh_->ok()) GTEST_SKIP() << "cannot set up network namespaces on a bridge here: " << mesh_->error();
    dir_.Write("secret", kSecret);
    // The coordinator's orchestration key, as an operator makes it; the
    // daemons trust its public half.
    ASSERT_TRUE(MakeOrchestrationKey("orchestration"));
    port_ = FreeLoopbackPort();
    StartDaemons(std::to_string(port_));
    cli_config_ = CliConfig("orchestration.key");
  }
  // A daemon in each namespace, its responder on `ports` (a TOML list's items).
  void StartDaemons(const std::string& ports) {
    daemons_.clear();
    // Each daemon lists the four hosts: a plan may only name members of the
    // responder's own peer list.
    std::string peers;
    for (int i = 0; i < kHosts; ++i) peers += std::string(i ? ", " : "") + "\"" + Host(i) + "\"";
    for (int i = 0; i < kHosts; ++i) {
      const std::string name = "host" + std::to_string(i);
      const std::string config = dir_.Write(
          name + ".toml", "state_directory = \"" + dir_.path() + "/" + name +
                              "\"\n[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
                              "[probes.disk]\nenabled = false\n[probes.net]\nenabled = false\nbind_address = \"" +
                              mesh_->Address(i) + "\"\nports = [" + ports + "]\nsecret_file = \"" + dir_.path() +
                              "/secret\"\npeers = [" + peers + "]\norchestration_public_key_file = \"" + dir_.path() +
                              "/orchestration.pub\"\n");
      daemons_.push_back(std::make_unique<FaultDaemon>(
          config, std::vector<std::string>{Find("ip"), "netns", "exec", mesh_->Namespace(i)}));
      ASSERT_NE(daemons_.back()->Port(), 0) << daemons_.back()->process().Stderr();
    }
  }
  void TearDown() override {
    daemons_.clear();  // before the namespaces go
    mesh_.reset();
  }

  // `name`.key and `name`.pub in the test's directory, made by openssl.
  bool MakeOrchestrationKey(const std::string& name) {
    const std::string key = dir_.path() + "/" + name + ".key";
    return RunCommand(Find("openssl"), {"genpkey", "-algorithm", "ed25519", "-out", key}, 20s).status == 0 &&
           ::chmod(key.c_str(), 0600) == 0 &&
           RunCommand(Find("openssl"), {"pkey", "-in", key, "-pubout", "-out", dir_.path() + "/" + name + ".pub"}, 20s)
                   .status == 0;
  }
  // The CLI's config: the secret, and the orchestration key `key` (none: "").
  std::string CliConfig(const std::string& key) const {
    std::string text = "[probes.net]\nsecret_file = \"" + dir_.path() + "/secret\"\n";
    if (!key.empty()) text += "orchestration_key_file = \"" + dir_.path() + "/" + key + "\"\n";
    return dir_.Write("cli-" + (key.empty() ? std::string("none") : key) + ".toml", text);
  }

  std::string Host(int i) const { return mesh_->Address(i) + ":" + std::to_string(port_); }
  std::string Hosts() const {
    std::string list;
    for (int i = 0; i < kHosts; ++i) list += (i ? "," : "") + Host(i);
    return list;
  }

  // `hostperf net` among the four hosts; its exit status and parsed JSON results.
  std::pair<CommandResult, nlohmann::json> Net(const std::string& test, const std::string& datarate,
                                               const std::string& duration) {
    const std::string results = dir_.path() + "/results.json";
    auto run = RunCommand(HOSTPERF_CLI_BIN,
                          {"--config.file=" + cli_config_, "net", "--hosts", Hosts(), "--datarate", datarate,
                           "--duration", duration, "--output-file", results, test},
                          120s);
    std::ifstream in(results);
    auto json = nlohmann::json::parse(in, nullptr, false);
    return {run, json.is_discarded() ? nlohmann::json::object() : json};
  }

  // The row of host i in a throughput table (not the average).
  static nlohmann::json Row(const nlohmann::json& rows, const std::string& node) {
    for (const auto& row : rows) {
      if (row["node"] == node) return row;
    }
    return nlohmann::json::object();
  }

  TempDir dir_;
  std::unique_ptr<Mesh> mesh_;
  std::uint16_t port_ = 0;
  std::vector<std::unique_ptr<FaultDaemon>> daemons_;
  std::string cli_config_;
};

TEST_F(NetMeshTest, EveryHostSendsAndReceivesAtOnceAndAShapedHostStandsOut) {
  // (a) Unshaped: every host near the rate both ways.
  {
    const auto [run, json] = Net("tcp-throughput", "16", "2");
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    const auto& rows = json["tests"]["tcp-throughput"];
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(kHosts + 1)) << rows.dump(1);
    for (int i = 0; i < kHosts; ++i) {
      const auto row = Row(rows, Host(i));
      ASSERT_FALSE(row.empty()) << Host(i) << " missing: " << rows.dump(1);
      EXPECT_EQ(row["mode"], "all-to-all");
      EXPECT_EQ(row["outcome"], "ok") << row.dump();
      EXPECT_EQ(row["sessions_ok"], kHosts - 1) << row.dump();
      EXPECT_GT(row["mb_per_second_sent"].get<double>(), 16 * 0.7) << row.dump();
      EXPECT_GT(row["mb_per_second_received"].get<double>(), 16 * 0.7) << row.dump();
      EXPECT_GT(row["bytes_received"].get<double>(), 0);
    }
    EXPECT_EQ(rows.back()["node"], "average");
    // vnetperf's table, one row per host as it reports, then the average.
    EXPECT_THAT(run.out, HasSubstr("| tcp-throughput    | 16                | " + Host(0)));
    EXPECT_THAT(run.out, HasSubstr("| tcp-throughput    | 16                | average"));
  }
  // (b) Host 3's link shaped to 5 MB/s each way: it sends and receives about
  // that; the others lose only its share.
  ASSERT_TRUE(mesh_->Shape(3, "40mbit")) << mesh_->error();
  const auto [run, json] = Net("tcp-throughput", "16", "3");
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const auto& rows = json["tests"]["tcp-throughput"];
  const auto shaped = Row(rows, Host(3));
  ASSERT_FALSE(shaped.empty()) << rows.dump(1);
  EXPECT_LT(shaped["mb_per_second_sent"].get<double>(), 16 * 0.5) << shaped.dump();
  EXPECT_LT(shaped["mb_per_second_received"].get<double>(), 16 * 0.5) << shaped.dump();
  for (int i = 0; i < 3; ++i) {
    const auto row = Row(rows, Host(i));
    EXPECT_GT(row["mb_per_second_sent"].get<double>(), 16 * 0.6) << row.dump();
    EXPECT_GT(row["mb_per_second_received"].get<double>(), 16 * 0.6) << row.dump();
    EXPECT_GT(row["mb_per_second_received"].get<double>(), 1.5 * shaped["mb_per_second_received"].get<double>());
  }
  bool named = false;
  for (const auto& finding : json["findings"]) {
    const std::string text = finding.get<std::string>();
    named = named || text.rfind(Host(3) + ":", 0) == 0;
    EXPECT_EQ(text.find(Host(0) + ":"), std::string::npos) << "an unshaped host is named: " << text;
  }
  EXPECT_TRUE(named) << json["findings"].dump(1);
}

TEST_F(NetMeshTest, AHostKilledMidTestIsReportedWithinABoundedTime) {
  std::thread killer([&] {
    std::this_thread::sleep_for(2s);
    daemons_[2]->process().Signal(SIGKILL);
  });
  const auto start = std::chrono::steady_clock::now();
  const auto [run, json] = Net("tcp-throughput", "8", "5");
  killer.join();
  const auto took = std::chrono::steady_clock::now() - start;
  // connect (2 s) + duration (5 s) + the report grace (8 s), and start-up.
  EXPECT_LT(took, 30s);
  const auto& rows = json["tests"]["tcp-throughput"];
  const auto dead = Row(rows, Host(2));
  ASSERT_FALSE(dead.empty()) << run.out << run.err;
  EXPECT_EQ(dead["outcome"], "failed") << dead.dump();
  EXPECT_THAT(dead.value("error", ""), HasSubstr("lost the connection")) << dead.dump();
  for (const int i : {0, 1, 3}) {
    const auto row = Row(rows, Host(i));
    EXPECT_EQ(row["outcome"], "partial") << row.dump();
    EXPECT_EQ(row["sessions_failed"], 1) << row.dump();
  }
  EXPECT_THAT(run.out, HasSubstr(Host(2)));
  EXPECT_EQ(run.status, 1) << "a host not measured fails the run";
  EXPECT_THAT(run.err, HasSubstr("host " + Host(2) + " was not measured")) << run.err;
}

// The fleet secret measures, the orchestration key directs: a CLI with the
// secret but no key measures from itself to each host (and says so); one
// with another key is denied by every host, naming the key it trusts.
TEST_F(NetMeshTest, OnlyTheTrustedOrchestrationKeyRunsPlans) {
  cli_config_ = CliConfig("");
  {
    const auto [run, json] = Net("tcp-throughput", "8", "1");
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    const auto& rows = json["tests"]["tcp-throughput"];
    ASSERT_FALSE(Row(rows, Host(0)).empty()) << rows.dump(1);
    EXPECT_NE(Row(rows, Host(0)).value("mode", ""), "all-to-all") << rows.dump(1);
    EXPECT_THAT(json["findings"].dump(), HasSubstr("holds no orchestration key")) << json.dump(1);
  }
  ASSERT_TRUE(MakeOrchestrationKey("forged"));
  cli_config_ = CliConfig("forged.key");
  const auto [run, json] = Net("tcp-throughput", "8", "1");
  // No host measured: the run fails and names one (vnetperf's exit status).
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("was not measured in tcp-throughput")) << run.err;
  const auto& rows = json["tests"]["tcp-throughput"];
  for (int i = 0; i < kHosts; ++i) {
    const auto row = Row(rows, Host(i));
    ASSERT_FALSE(row.empty()) << Host(i) << ": " << rows.dump(1) << run.err;
    EXPECT_EQ(row["outcome"], "failed") << row.dump();
    EXPECT_THAT(row.value("error", ""), HasSubstr("orchestration_public_key_file")) << row.dump();
  }
}

// Daemons on vnetperf's three ports: the throughput test goes to the second,
// and the plans that name the hosts on it are taken (a member on any of the
// responder's own ports is a member).
TEST_F(NetMeshTest, DaemonsOnThreePortsTakePlansOnTheSecond) {
  const std::string p = std::to_string(port_), p1 = std::to_string(port_ + 1), p2 = std::to_string(port_ + 2);
  StartDaemons(p + ", " + p1 + ", " + p2);
  const std::string results = dir_.path() + "/three.json";
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              {"--config.file=" + cli_config_, "net", "--hosts", Hosts(), "--ports", p, "--datarate",
                               "8", "--duration", "1", "--output-file", results, "tcp-throughput"},
                              120s);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  std::ifstream in(results);
  const auto json = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(json.is_discarded());
  for (int i = 0; i < kHosts; ++i) {
    const auto row = Row(json["tests"]["tcp-throughput"], Host(i));
    EXPECT_EQ(row.value("outcome", ""), "ok") << row.dump();
    EXPECT_EQ(row.value("sessions_ok", 0), kHosts - 1) << row.dump();
  }
}

}  // namespace
}  // namespace hostperf::testing
