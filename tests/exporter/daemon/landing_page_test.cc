#include "hostperf/daemon/landing_page.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "hostperf/probes/probe.h"

namespace hostperf::exporter {
namespace {

using namespace std::chrono_literals;
using probes::ProbeOutcome;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(HtmlEscapeTest, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(HtmlEscape(R"(<a href="x">Tom & Jerry's</a>)"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
}

TEST(HtmlEscapeTest, LeavesPlainTextAlone) {
  EXPECT_EQ(HtmlEscape(""), "");
  EXPECT_EQ(HtmlEscape("cpu probe: 5min, ünïcödé"), "cpu probe: 5min, ünïcödé");
}

TEST(HtmlEscapeTest, EscapesAnAmpersandOnlyOnce) { EXPECT_EQ(HtmlEscape("&amp;"), "&amp;amp;"); }

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
  EXPECT_THAT(html, HasSubstr("42.000s ago"));                // when
  EXPECT_THAT(html, HasSubstr("1.500s"));                     // how long
  EXPECT_THAT(html, HasSubstr("skipped: budget_exhausted"));  // skipped
  EXPECT_THAT(html, HasSubstr("disabled"));                   // disabled
  EXPECT_THAT(html, HasSubstr("<td>running</td>"));           // running
  EXPECT_THAT(html, HasSubstr("in 90.000s"));                 // next run
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
  EXPECT_THAT(RenderLandingPage({status}, "/metrics", "x", kNow), HasSubstr("0.000s ago"));
}

}  // namespace
}  // namespace hostperf::exporter
