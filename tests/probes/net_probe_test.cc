#include "hostperf/probes/net/net_probe.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "hostperf/probes/net/module.h"

namespace hostperf::probes::net {
namespace {

using namespace std::chrono_literals;
using prometheus::ClientMetric;
using prometheus::MetricFamily;

std::optional<ClientMetric> FindSeries(const std::vector<MetricFamily>& families, const std::string& name,
                                       const std::vector<ClientMetric::Label>& labels = {}) {
  const auto family =
      std::find_if(families.begin(), families.end(), [&](const MetricFamily& f) { return f.name == name; });
  if (family == families.end()) return std::nullopt;
  for (const ClientMetric& metric : family->metric) {
    if (metric.label == labels) return metric;
  }
  return std::nullopt;
}

class NetProbeTest : public ::testing::Test {
 protected:
  NetProbeTest() {
    Net().ports = {0};  // ephemeral responder port
    Net().packets_per_cycle = 5;
    Net().packet_interval = 1ms;
    Net().reply_timeout = 1s;  // returns once answered; generous for a loaded machine
    Net().throughput_duration = 100ms;
    Net().throughput_rate = 8 << 20;
    ProbeDeps deps;
    deps.registry = registry_.get();
    probe_ = CreateNetProbe(deps);
    probe_->StartServices(config_.Section("net"));
  }

  RunContext Context(RunMode mode, nlohmann::json options = nullptr) {
    RunContext ctx = MakeRunContext(config_, "net", mode);
    ctx.deadline = std::chrono::steady_clock::now() + 60s;
    auto parsed = ParseProbeOptions("net", options);  // once, at the edge, as the run API does
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    if (parsed) ctx.options = std::move(parsed).value();
    return ctx;
  }

  // The responder's port, learned from a scheduled run against the default self peer.
  std::string SelfAddress() {
    const auto outcome = probe_->Run(Context(RunMode::kScheduled));
    return outcome.result["peers"][0]["address"].get<std::string>();
  }

  NetProbeConfig& Net() { return config_.EditSettings<NetProbeConfig>(); }

  config::Config config_ = DefaultConfig();
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Probe> probe_;
};

TEST_F(NetProbeTest, DefaultsProbeTheOwnResponder) {
  auto outcome = probe_->Run(Context(RunMode::kScheduled));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  EXPECT_EQ(outcome.result["peers"][0]["peer"], "localhost");
  EXPECT_EQ(outcome.result["peers"][0]["up"], true);
  EXPECT_EQ(outcome.result["throughput"]["test"], "tcp-throughput");
  outcome = probe_->Run(Context(RunMode::kScheduled));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["throughput"]["test"], "udp-throughput");

  const auto families = registry_->Collect();
  const std::vector<ClientMetric::Label> peer = {{"peer", "localhost"}};
  ASSERT_TRUE(FindSeries(families, "hostperf_net_peer_up", peer));
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", peer)->gauge.value, 1);
  EXPECT_EQ(FindSeries(families, "hostperf_net_rtt_seconds", peer)->histogram.sample_count, 10u);
  EXPECT_EQ(FindSeries(families, "hostperf_net_packets_sent_total", peer)->counter.value, 10);
  EXPECT_EQ(FindSeries(families, "hostperf_net_packets_lost_total", peer)->counter.value, 0);
  EXPECT_NEAR(FindSeries(families, "hostperf_net_clock_offset_seconds", peer)->gauge.value, 0, 0.01);
  EXPECT_GT(FindSeries(families, "hostperf_net_tcp_throughput_bytes_per_second", peer)->gauge.value, 0);
  EXPECT_GT(FindSeries(families, "hostperf_net_udp_throughput_bytes_per_second", peer)->gauge.value, 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_responder_up")->gauge.value, 1);
  EXPECT_EQ(FindSeries(families, "hostperf_net_responder_requests_total", {{"type", "ping"}})->counter.value, 10);
}

TEST_F(NetProbeTest, UnresolvableAndDeadPeersDoNotStallOthers) {
  const std::string self = SelfAddress();
  Net().peers = {"nonexistent.invalid", "127.0.0.1:1", self};
  const auto started = std::chrono::steady_clock::now();
  const auto outcome = probe_->Run(Context(RunMode::kScheduled));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  const auto families = registry_->Collect();
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", {{"peer", "nonexistent.invalid"}})->gauge.value, 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", {{"peer", "127.0.0.1:1"}})->gauge.value, 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", {{"peer", self}})->gauge.value, 1);
}

TEST_F(NetProbeTest, BudgetSkipsThroughput) {
  config_.budget.net_bytes_per_hour = 1024;
  const auto outcome = probe_->Run(Context(RunMode::kScheduled));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["throughput"]["skipped"], "budget");
  EXPECT_EQ(
      FindSeries(registry_->Collect(), "hostperf_net_throughput_skipped_total", {{"reason", "budget"}})->counter.value,
      1);
}

TEST_F(NetProbeTest, FullRunTablesAndBadHosts) {
  const std::string self = SelfAddress();
  const nlohmann::json options = {
      {"hosts", {self}}, {"tests", {"latency", "tcp-throughput", "connections"}}, {"datarate", 8}, {"duration", 0.2}};
  const auto outcome = probe_->Run(Context(RunMode::kFull, options));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  const auto& tests = outcome.result["tests"];
  ASSERT_EQ(tests["latency"].size(), 1u);
  EXPECT_EQ(tests["latency"][0]["node"], self);
  EXPECT_EQ(tests["latency"][0]["lost"], 0);
  ASSERT_EQ(tests["tcp-throughput"].size(), 2u);  // the host and the average row
  EXPECT_EQ(tests["tcp-throughput"][1]["node"], "average");
  EXPECT_GT(tests["tcp-throughput"][0]["bytes_received"].get<double>(), 0);
  EXPECT_EQ(tests["connections"][0]["accepted"], 64);
  EXPECT_FALSE(tests.contains("udp-throughput"));

  const std::string report = FormatVnetperfReport(outcome.result);
  EXPECT_NE(report.find("The maximum recommended rtt latency"), std::string::npos) << report;
  EXPECT_NE(report.find("rtt latency (us)  | clock skew (us)"), std::string::npos) << report;
  EXPECT_NE(report.find("| tcp-throughput    | 8                 | " + self), std::string::npos) << report;
  EXPECT_NE(report.find("| average "), std::string::npos) << report;

  nlohmann::json bad = options;
  bad["hosts"] = {self, "127.0.0.1:1"};
  bad["tests"] = {"latency"};
  auto failed = probe_->Run(Context(RunMode::kFull, bad));
  EXPECT_EQ(failed.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(failed.reason, "bad_hosts");
  ASSERT_EQ(failed.result["bad_hosts"].size(), 1u) << failed.result.dump();  // only the dead one
  EXPECT_FALSE(failed.result["tests"].contains("latency"));                  // nothing ran
  bad["ignore_bad_hosts"] = true;
  const auto ignored = probe_->Run(Context(RunMode::kFull, bad));
  ASSERT_EQ(ignored.status, ProbeOutcome::Status::kSuccess) << ignored.message << ": " << ignored.result.dump();
  EXPECT_EQ(ignored.result["tests"]["latency"].size(), 1u);
  EXPECT_EQ(ignored.result["bad_hosts"][0]["node"], "127.0.0.1:1");
}

TEST(NetOptionsTest, Validation) {
  EXPECT_TRUE(ParseNetOptions(nlohmann::json::object()).ok());
  EXPECT_TRUE(ParseNetOptions(
                  {{"tests", {"latency"}}, {"datarate", 0}, {"duration", 1}, {"ports", nlohmann::json::array({14159})}})
                  .ok());
  EXPECT_FALSE(ParseNetOptions({{"tests", {"speed"}}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"duration", 0}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"datarate", -1}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"hosts", {"bad host"}}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"ports", nlohmann::json::array({70000})}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"ports", nlohmann::json::array({-1})}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"bogus", 1}}).ok());
}

TEST(NetProbeNoServicesTest, WithoutSecretFileTheCliCannotAuthenticate) {
  ProbeDeps deps;
  auto probe = CreateNetProbe(deps);  // no StartServices: the CLI's situation
  const RunContext ctx = MakeRunContext(DefaultConfig(), "net", RunMode::kFull);
  const auto outcome = probe->Run(ctx);
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "no_secret");
}

}  // namespace
}  // namespace hostperf::probes::net
