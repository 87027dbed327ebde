#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/daemon/scheduler.h"
#include "hostperf/http/html.h"  // HtmlEscape

namespace hostperf::daemon {

// Plain HTML, no external assets: every probe with its schedule, last run and
// last result against the documented thresholds (pass, warn, fail with the
// threshold shown), the recent full runs (RunManager records, newest first)
// with links to /api/v1/runs/{id}, and links to the other endpoints.
// A probe whose last run succeeded but whose worst headline figure is warn or
// fail reads "degraded" in that verdict's colour, not "ok". The next calendar
// full run is shown when there is one.
std::string RenderLandingPage(const std::vector<ProbeStatus>& probes, std::string_view telemetry_path,
                              std::string_view config_source, double now_unix_seconds,
                              const std::vector<nlohmann::json>& full_runs = {},
                              std::optional<double> next_full_run_unix_seconds = std::nullopt);

// A span of time for people, two units at most, rounded down: "0 s", "34 s",
// "1 min 34 s", "5 min", "3 h 12 min", "1 day 7 h", "2 days", "12 days".
std::string HumaniseDuration(double seconds);
// `then` relative to `now`: "1 min 34 s ago", "in 2 days 7 h".
std::string HumaniseRelative(double then_unix_seconds, double now_unix_seconds);

// The verdict cells' HTML for a probe result: one line per headline figure.
std::string RenderFigures(std::string_view probe, const nlohmann::json& result);

}  // namespace hostperf::daemon
