// The headline figures of each probe's result against the documented thresholds
// (probes::HeadlineFigures), and their verdicts on the landing page.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hostperf/daemon/landing_page.h"
#include "hostperf/probes/probe.h"

namespace hostperf::daemon {
namespace {

using nlohmann::json;
using probes::Figure;
using probes::HeadlineFigures;
using probes::Verdict;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr double kMB = 1024.0 * 1024.0;

const Figure* Find(const std::vector<Figure>& figures, const std::string& name, const std::string& subject = "") {
  for (const Figure& figure : figures) {
    if (figure.name == name && figure.subject == subject) return &figure;
  }
  return nullptr;
}

Verdict VerdictOf(const std::string& probe, const json& result, const std::string& name,
                  const std::string& subject = "") {
  const auto figures = HeadlineFigures(probe, result);
  const Figure* figure = Find(figures, name, subject);
  EXPECT_NE(figure, nullptr) << name << " " << subject << " in " << result.dump();
  return figure != nullptr ? figure->verdict : Verdict::kInfo;
}

TEST(HeadlineFiguresTest, CpuLowLoadMedianAgainst200And1000Microseconds) {
  EXPECT_EQ(VerdictOf("cpu", {{"low_load_median_seconds", 150e-6}}, "low_load_median_seconds"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("cpu", {{"low_load_median_seconds", 200e-6}}, "low_load_median_seconds"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("cpu", {{"low_load_median_seconds", 450e-6}}, "low_load_median_seconds"), Verdict::kWarn);
  EXPECT_EQ(VerdictOf("cpu", {{"low_load_median_seconds", 2e-3}}, "low_load_median_seconds"), Verdict::kFail);
  const auto figures = HeadlineFigures("cpu", {{"low_load_median_seconds", 153e-6}});
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_EQ(figures[0].shown, "153 µs");
  EXPECT_THAT(figures[0].threshold, HasSubstr("200 µs"));
}

TEST(HeadlineFiguresTest, CpuThrottleRatioAgainst2AndBaselineForInformation) {
  EXPECT_EQ(VerdictOf("cpu", {{"throttle_ratio", 1.2}}, "throttle_ratio"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("cpu", {{"throttle_ratio", 3.5}}, "throttle_ratio"), Verdict::kFail);
  EXPECT_EQ(VerdictOf("cpu", {{"baseline_ratio", 1.4}}, "baseline_ratio"), Verdict::kInfo);
  // Not measured (null) gives no figure rather than a false verdict.
  EXPECT_THAT(HeadlineFigures("cpu", {{"throttle_ratio", nullptr}, {"low_load_median_seconds", "fast"}}), IsEmpty());
}

json DiskResult(double write_mb, double rewrite_mb, double read_mb, int cores) {
  const auto test = [](const char* name, double mb) {
    return json{{"test", name}, {"throughput_bytes_per_second", mb * kMB}};
  };
  return {{"physical_cores", cores},
          {"directories",
           {{{"directory", "/data/<1>"},
             {"tests", {test("Write", write_mb), test("ReWrite", rewrite_mb), test("Read", read_mb)}}}}}};
}

TEST(HeadlineFiguresTest, DiskWriteAndReadPerPhysicalCoreAgainst20And40) {
  // 4 cores: 200 MB/s = 50 per core (pass), 100 = 25 (warn), 40 = 10 (fail).
  const auto figures = HeadlineFigures("disk", DiskResult(200, 1, 100, 4));
  ASSERT_EQ(figures.size(), 2u);  // ReWrite does not count
  const Figure* write = Find(figures, "write_bytes_per_second_per_core", "/data/<1>");
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(write->verdict, Verdict::kPass);
  EXPECT_DOUBLE_EQ(write->value, 50 * kMB);
  EXPECT_EQ(write->shown, "50.0 MB/s");
  EXPECT_EQ(Find(figures, "read_bytes_per_second_per_core", "/data/<1>")->verdict, Verdict::kWarn);
  EXPECT_EQ(VerdictOf("disk", DiskResult(40, 0, 40, 4), "read_bytes_per_second_per_core", "/data/<1>"), Verdict::kFail);
}

TEST(HeadlineFiguresTest, NetScheduledRttClockAndCappedThroughput) {
  const json result = {{"peers",
                        {{{"peer", "a"}, {"up", true}, {"rtt_median_seconds", 150e-6}, {"clock_offset_seconds", 0.002}},
                         {{"peer", "b"}, {"up", true}, {"rtt_median_seconds", 1500e-6}, {"clock_offset_seconds", -1.5}},
                         {{"peer", "down"}, {"up", false}, {"rtt_median_seconds", 0}}}},
                       {"throughput",
                        {{"test", "tcp-throughput"},
                         {"node", "a"},
                         {"mb_per_second_received", 31.9},
                         {"rate_limit_mb_per_second", 32}}}};
  EXPECT_EQ(VerdictOf("net", result, "rtt_seconds", "a"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("net", result, "rtt_seconds", "b"), Verdict::kFail);
  EXPECT_EQ(VerdictOf("net", result, "clock_offset_seconds", "a"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("net", result, "clock_offset_seconds", "b"), Verdict::kFail);
  EXPECT_EQ(Find(HeadlineFigures("net", result), "rtt_seconds", "down"), nullptr);
  // A burst under a 32 MB/s cap says nothing about the 100 MB/s minimum.
  const auto figures = HeadlineFigures("net", result);
  const Figure* tcp = Find(figures, "tcp_throughput_bytes_per_second", "a");
  ASSERT_NE(tcp, nullptr);
  EXPECT_EQ(tcp->verdict, Verdict::kInfo);
  EXPECT_THAT(tcp->threshold, HasSubstr("rate-capped"));
}

TEST(HeadlineFiguresTest, NetFullRunTablesUseTheBestRatePerNode) {
  const json result = {{"tests",
                        {{"latency", {{{"node", "h1"}, {"rtt_latency_us", 450.0}, {"clock_skew_us", 20.0}}}},
                         {"tcp-throughput",
                          {{{"node", "h1"}, {"mb_per_second_received", 31.0}},
                           {{"node", "h1"}, {"mb_per_second_received", 950.0}},
                           {{"node", "average"}, {"mb_per_second_received", 490.5}},
                           {{"node", "h2"}, {"mb_per_second_received", 90.0}}}}}}};
  EXPECT_EQ(VerdictOf("net", result, "rtt_seconds", "h1"), Verdict::kWarn);
  EXPECT_EQ(VerdictOf("net", result, "clock_offset_seconds", "h1"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("net", result, "tcp_throughput_bytes_per_second", "h1"), Verdict::kPass);
  EXPECT_EQ(VerdictOf("net", result, "tcp_throughput_bytes_per_second", "h2"), Verdict::kFail);
  EXPECT_EQ(Find(HeadlineFigures("net", result), "tcp_throughput_bytes_per_second", "average"), nullptr);
}

TEST(HeadlineFiguresTest, MemoryBandwidthIsInformational) {
  const json result = {{"kernels",
                        {{{"kernel", "copy"}, {"best_bytes_per_second", 1e10}},
                         {{"kernel", "triad"}, {"best_bytes_per_second", 1.2e10}}}}};
  const auto figures = HeadlineFigures("memory", result);
  ASSERT_EQ(figures.size(), 1u);
  EXPECT_EQ(figures[0].name, "triad_bytes_per_second");
  EXPECT_EQ(figures[0].verdict, Verdict::kInfo);
}

TEST(HeadlineFiguresTest, MalformedResultsGiveNoFigures) {
  for (const json& bad :
       {json(nullptr), json("x"), json::array({1, 2}), json{{"directories", "nope"}},
        json{{"peers", {{{"up", "yes"}}}}}, json{{"tests", {{"latency", 5}}}}, json{{"kernels", {1, 2}}}}) {
    // Every registered probe's figures, and a name no probe has.
    EXPECT_THAT(HeadlineFigures("unknown", bad), IsEmpty()) << bad.dump();
    for (const probes::ProbeModule* module : probes::AllProbes()) {
      EXPECT_THAT(HeadlineFigures(module->name, bad), IsEmpty()) << module->name << " " << bad.dump();
    }
  }
}

// ---------------------------------------------------------------------------
// The landing page shows the verdicts.

ProbeStatus CpuStatus(double low_load_seconds) {
  ProbeStatus status;
  status.name = "cpu";
  status.enabled = true;
  status.interval = std::chrono::minutes(5);
  status.timeout = std::chrono::minutes(1);
  status.last_run_unix_seconds = 1000;
  status.last_outcome = probes::ProbeOutcome::Success({{"low_load_median_seconds", low_load_seconds}});
  return status;
}

TEST(LandingPageVerdictsTest, ShowsEachFigureWithItsVerdictAndThreshold) {
  const std::string html = RenderLandingPage({CpuStatus(2e-3)}, "/metrics", "x", 1010);
  EXPECT_THAT(html, HasSubstr("<span class=fail>low-load median: 2000 µs — fail (pass ≤ 200 µs, warn ≤ 1000 µs)"));
  EXPECT_THAT(RenderLandingPage({CpuStatus(1e-4)}, "/metrics", "x", 1010),
              HasSubstr("<span class=ok>low-load median: 100 µs — pass"));
}

TEST(LandingPageVerdictsTest, ListsRecentFullRunsWithLinksAndEscapes) {
  const json run = {{"id", "r-20261202-113501-1"},          {"state", "failed"},
                    {"reason", "disk: <no_space>"},         {"probes", {"disk"}},
                    {"created_unix_seconds", 1796211301.0}, {"results", {{"disk", DiskResult(10, 0, 400, 1)}}}};
  const std::string html = RenderLandingPage({}, "/metrics", "x", 1796211400.0, {run});
  EXPECT_THAT(html, HasSubstr("<a href=\"/api/v1/runs/r-20261202-113501-1\">r-20261202-113501-1</a>"));
  EXPECT_THAT(html, HasSubstr("failed: disk: &lt;no_space&gt;"));
  EXPECT_THAT(html, HasSubstr("2026-12-02 11:35:01 UTC"));
  EXPECT_THAT(html, HasSubstr("Write per physical core (/data/&lt;1&gt;): 10.0 MB/s — fail"));
  EXPECT_THAT(html, HasSubstr("Read per physical core (/data/&lt;1&gt;): 400.0 MB/s — pass"));
  EXPECT_THAT(html, Not(HasSubstr("<no_space>")));
  EXPECT_THAT(html, Not(HasSubstr("/data/<1>")));
  EXPECT_THAT(html, HasSubstr("<a href=\"/api/v1/runs\">"));
}

TEST(LandingPageVerdictsTest, SaysHowToStartAFullRunWhenThereIsNone) {
  EXPECT_THAT(RenderLandingPage({}, "/metrics", "x", 0), HasSubstr("No full runs yet"));
}

}  // namespace
}  // namespace hostperf::daemon
