#include "hostperf/daemon/landing_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/probes/probe.h"

namespace hostperf::daemon {
namespace {

using namespace std::chrono_literals;
using probes::ProbeOutcome;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(HtmlEscapeTest, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(http::HtmlEscape(R"(<a href="x">Tom & Jerry's</a>)"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
}

TEST(HtmlEscapeTest, LeavesPlainTextAlone) {
  EXPECT_EQ(http::HtmlEscape(""), "");
  EXPECT_EQ(http::HtmlEscape("cpu probe: 5min, ünïcödé"), "cpu probe: 5min, ünïcödé");
}

TEST(HtmlEscapeTest, EscapesAnAmpersandOnlyOnce) { EXPECT_EQ(http::HtmlEscape("&amp;"), "&amp;amp;"); }

constexpr double kNow = 1'800'000'000.0;

ProbeStatus Enabled(std::string name) {
  ProbeStatus status;
  status.name = std::move(name);
  status.enabled = true;
  status.interval = 5min;
  status.timeout = 1min;
  status.due_in = 90s;
  return status;
}

std::vector<ProbeStatus> AllKindsOfStatus() {
  std::vector<ProbeStatus> probes;

  probes.push_back(Enabled("never_run"));

  ProbeStatus ok = Enabled("all_good");
  ok.last_run_unix_seconds = kNow - 42;
  ok.last_duration = 1500ms;
  ok.last_outcome = ProbeOutcome::Success({});
  probes.push_back(ok);

  ProbeStatus failed = Enabled("broken");
  failed.last_run_unix_seconds = kNow - 10;
  failed.last_outcome = ProbeOutcome::Failure("<script>alert(1)</script>", "message with \"quotes\" & <b>tags</b>");
  probes.push_back(failed);

  ProbeStatus skipped = Enabled("skipping");
  skipped.last_run_unix_seconds = kNow - 5;
  skipped.last_outcome = ProbeOutcome::Skipped("budget_exhausted", "no budget");
  probes.push_back(skipped);

  ProbeStatus disabled;
  disabled.name = "switched_off";
  disabled.enabled = false;
  probes.push_back(disabled);

  ProbeStatus running = Enabled("busy_now");
  running.running = true;
  probes.push_back(running);
  return probes;
}

std::string Render() {
  return RenderLandingPage(AllKindsOfStatus(), "/custom/metrics", "/etc/hostperf/<x>.toml", kNow);
}

TEST(RenderLandingPageTest, IsACompleteHtmlDocument) {
  const std::string html = Render();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("</html>"));
  EXPECT_THAT(html, HasSubstr("<meta charset=utf-8>"));
}

TEST(RenderLandingPageTest, ListsEveryProbe) {
  const std::string html = Render();
  for (const char* name : {"never_run", "all_good", "broken", "skipping", "switched_off", "busy_now"}) {
    EXPECT_THAT(html, HasSubstr(std::string("<td>") + name + "</td>"));
  }
}

TEST(RenderLandingPageTest, ShowsEachKindOfStatus) {
  const std::string html = Render();
  EXPECT_THAT(html, HasSubstr("not yet"));                    // never run
  EXPECT_THAT(html, HasSubstr("<td class=ok>ok</td>"));       // succeeded
  EXPECT_THAT(html, HasSubstr("42 s ago"));                   // when
  EXPECT_THAT(html, HasSubstr("1.500s"));                     // how long
  EXPECT_THAT(html, HasSubstr("skipped: budget_exhausted"));  // skipped
  EXPECT_THAT(html, HasSubstr("disabled"));                   // disabled
  EXPECT_THAT(html, HasSubstr("<td>running</td>"));           // running
  EXPECT_THAT(html, HasSubstr("in 1 min 30 s"));              // next run
  EXPECT_THAT(html, HasSubstr("every 5min"));                 // schedule
}

TEST(RenderLandingPageTest, EscapesFailureReasonMessageAndConfigSource) {
  const std::string html = Render();
  EXPECT_THAT(html, HasSubstr("failed: &lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(html, HasSubstr("message with &quot;quotes&quot; &amp; &lt;b&gt;tags&lt;/b&gt;"));
  EXPECT_THAT(html, HasSubstr("/etc/hostperf/&lt;x&gt;.toml"));
  EXPECT_THAT(html, Not(HasSubstr("<b>tags")));
}

TEST(RenderLandingPageTest, LinksToTheTelemetryPathAndHealthEndpoints) {
  const std::string html = Render();
  EXPECT_THAT(html, HasSubstr("<a href=\"/custom/metrics\">"));
  EXPECT_THAT(html, HasSubstr("<a href=\"/-/healthy\">"));
  EXPECT_THAT(html, HasSubstr("<a href=\"/-/ready\">"));
}

TEST(RenderLandingPageTest, EscapesTheTelemetryPath) {
  const std::string html = RenderLandingPage({}, "/m\"><script>", "<embedded defaults>", kNow);
  EXPECT_THAT(html, HasSubstr("href=\"/m&quot;&gt;&lt;script&gt;\""));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

TEST(RenderLandingPageTest, LoadsNoExternalAssetsAndRunsNoScript) {
  const std::string html = Render();
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  EXPECT_THAT(html, Not(HasSubstr("<img")));
}

TEST(RenderLandingPageTest, ClockBehindTheLastRunShowsZeroAgo) {
  ProbeStatus status = Enabled("future");
  status.last_run_unix_seconds = kNow + 100;
  status.last_outcome = ProbeOutcome::Success({});
  EXPECT_THAT(RenderLandingPage({status}, "/metrics", "x", kNow), HasSubstr("0 s ago"));
}

TEST(HumaniseDurationTest, TwoUnitsAtMostRoundedDown) {
  EXPECT_EQ(HumaniseDuration(0), "0 s");
  EXPECT_EQ(HumaniseDuration(0.9), "0 s");
  EXPECT_EQ(HumaniseDuration(59.99), "59 s");
  EXPECT_EQ(HumaniseDuration(60), "1 min");
  EXPECT_EQ(HumaniseDuration(94), "1 min 34 s");
  EXPECT_EQ(HumaniseDuration(3599), "59 min 59 s");
  EXPECT_EQ(HumaniseDuration(3600), "1 h");
  EXPECT_EQ(HumaniseDuration(3 * 3600 + 12 * 60 + 59), "3 h 12 min");
  EXPECT_EQ(HumaniseDuration(86400 + 7 * 3600), "1 day 7 h");
  EXPECT_EQ(HumaniseDuration(2 * 86400 + 7 * 3600 + 59 * 60), "2 days 7 h");
  EXPECT_EQ(HumaniseDuration(2 * 86400 + 1800), "2 days");
  EXPECT_EQ(HumaniseDuration(12 * 86400 + 5 * 3600), "12 days");
  EXPECT_EQ(HumaniseDuration(-5), "0 s");
}

TEST(HumaniseDurationTest, RelativeToNowBothWays) {
  EXPECT_EQ(HumaniseRelative(kNow - 94, kNow), "1 min 34 s ago");
  EXPECT_EQ(HumaniseRelative(kNow - 2 * 86400, kNow), "2 days ago");
  EXPECT_EQ(HumaniseRelative(kNow + 3 * 3600 + 12 * 60, kNow), "in 3 h 12 min");
  EXPECT_EQ(HumaniseRelative(kNow, kNow), "0 s ago");
}

TEST(RenderLandingPageTest, ShowsTheNextCalendarFullRunOrThatThereIsNone) {
  // 2 days 7 h 10 min after "now" (2027-01-15 08:00 UTC).
  const double now = 1'800'000'000.0;
  const double next = now + 2 * 86400 + 7 * 3600 + 600;
  const std::string scheduled = RenderLandingPage({}, "/metrics", "x", now, {}, next);
  EXPECT_THAT(scheduled, HasSubstr("Next full run: Sun 2027-01-17 15:10 UTC, in 2 days 7 h"));
  EXPECT_THAT(RenderLandingPage({}, "/metrics", "x", now), HasSubstr("No full runs scheduled"));
}

// A run that completed but whose figures fail the thresholds is not "ok".
TEST(RenderLandingPageTest, SucceededRunWithAFailingFigureReadsDegraded) {
  ProbeStatus failing = Enabled("cpu");
  failing.last_run_unix_seconds = kNow - 5;
  failing.last_outcome = ProbeOutcome::Success({{"low_load_median_seconds", 2e-3}});
  const std::string html = RenderLandingPage({failing}, "/metrics", "x", kNow);
  EXPECT_THAT(html, Not(HasSubstr("<td class=ok>ok</td>")));
  EXPECT_THAT(html, HasSubstr("<td class=fail title="));
  EXPECT_THAT(html, HasSubstr(">degraded: "));
  EXPECT_THAT(html, HasSubstr("— fail</td>"));

  ProbeStatus warning = failing;
  warning.last_outcome = ProbeOutcome::Success({{"low_load_median_seconds", 450e-6}});
  const std::string warn_html = RenderLandingPage({warning}, "/metrics", "x", kNow);
  EXPECT_THAT(warn_html, HasSubstr("<td class=warn title="));
  EXPECT_THAT(warn_html, HasSubstr("— warn</td>"));

  ProbeStatus passing = failing;
  passing.last_outcome = ProbeOutcome::Success({{"low_load_median_seconds", 150e-6}});
  EXPECT_THAT(RenderLandingPage({passing}, "/metrics", "x", kNow), HasSubstr("<td class=ok>ok</td>"));
}

TEST(RenderLandingPageTest, FullRunRowShowsDegradedStateAgeAndTrigger) {
  const nlohmann::json run = {{"id", "r-20270115-000000-1"},
                              {"state", "succeeded"},
                              {"trigger", "calendar"},
                              {"probes", {"cpu"}},
                              {"created_unix_seconds", kNow - 2 * 86400},
                              {"results", {{"cpu", {{"low_load_median_seconds", 2e-3}}}}}};
  const std::string html = RenderLandingPage({}, "/metrics", "x", kNow, {run});
  EXPECT_THAT(html, HasSubstr("<td class=fail>succeeded, degraded</td>"));
  EXPECT_THAT(html, HasSubstr("(2 days ago), by the calendar"));
}

}  // namespace
}  // namespace hostperf::daemon
