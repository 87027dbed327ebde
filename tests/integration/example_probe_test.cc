// A new probe is one folder plus one registration line: the test-only probe
// in tests/probes/example/ is linked into a daemon and a CLI built from the
// real main()s, and shows up everywhere a probe does without any central file
// naming it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "process_harness.h"
#include "registered_probes.h"

namespace hostperf::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

TEST(ExampleProbe, HasItsOwnCommandAndHelp) {
  const auto usage = RunCommand(HOSTPERF_EXAMPLE_CLI_BIN, {"--help"}, seconds(30));
  EXPECT_EQ(usage.status, 0);
  EXPECT_THAT(usage.out, HasSubstr("  example             test-only probe"));

  const auto help = RunCommand(HOSTPERF_EXAMPLE_CLI_BIN, {"example", "--help"}, seconds(30));
  EXPECT_EQ(help.status, 0) << help.err;
  EXPECT_THAT(help.out, HasSubstr("usage: hostperf example"));

  TempDir dir;
  const std::string config = dir.Write("hostperf.toml", "state_directory = \"" + dir.path() +
                                                            "/state\"\n[probes.example]\ngreeting = \"hi\"\n"
                                                            "repeat = 3\n");
  const auto run = RunCommand(HOSTPERF_EXAMPLE_CLI_BIN, {"--config.file=" + config, "example"}, seconds(30));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("\"length\":6.0"));

  // The CLI without the probe knows no such command.
  const auto plain = RunCommand(HOSTPERF_CLI_BIN, {"example"}, seconds(30));
  EXPECT_EQ(plain.status, 2);
  EXPECT_THAT(plain.err, HasSubstr("unknown command \"example\""));
}

TEST(ExampleProbe, ItsConfigSectionIsCheckedLikeAnyOther) {
  TempDir dir;
  const std::string config = dir.Write("bad.toml", "[probes.example]\nrepeat = 11\n");
  const auto check =
      RunCommand(HOSTPERF_EXAMPLE_EXPORTER_BIN, {"--config.file=" + config, "--config.check"}, seconds(30));
  EXPECT_NE(check.status, 0);
  EXPECT_THAT(check.err, HasSubstr(config + ":2:10: probes.example.repeat: 11 is out of range [1, 10]"));
}

TEST(ExampleProbe, IsScheduledAndServedOnMetricsAndTheLandingPage) {
  TempDir dir;
  const std::string config =
      dir.Write("hostperf.toml", "state_directory = \"" + dir.path() +
                                     "/state\"\n"
                                     "[scheduler]\nfirst_run_splay = \"0s\"\n" +
                                     DisabledProbesToml() + "[probes.example]\ngreeting = \"hello there\"\n");
  ChildProcess daemon(HOSTPERF_EXAMPLE_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
  const int port = daemon.ListeningPort();
  ASSERT_NE(port, 0) << daemon.Stderr();

  std::string metrics;
  const auto until = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const auto reply = HttpRequest(port, "GET", "/metrics");
    metrics = reply ? reply->body : "";
    if (metrics.find("hostperf_probe_success{probe=\"example\"} 1") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_THAT(metrics, HasSubstr("hostperf_probe_success{probe=\"example\"} 1"));
  EXPECT_THAT(metrics, HasSubstr("hostperf_example_greeting_length 11"));

  const auto landing = HttpRequest(port, "GET", "/");
  ASSERT_TRUE(landing);
  EXPECT_THAT(landing->body, HasSubstr("example"));
  EXPECT_THAT(landing->body, HasSubstr("11 characters"));
}

}  // namespace
}  // namespace hostperf::testing
