#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/daemon/scheduler.h"
#include "hostperf/http/html.h"  // HtmlEscape

namespace hostperf::exporter {

// Plain HTML, no external assets: every probe with its schedule, last run and
// last result against the documented thresholds (pass, warn, fail with the
// threshold shown), the recent full runs (RunManager records, newest first)
// with links to /api/v1/runs/{id}, and links to the other endpoints.
std::string RenderLandingPage(const std::vector<ProbeStatus>& probes, std::string_view telemetry_path,
                              std::string_view config_source, double now_unix_seconds,
                              const std::vector<nlohmann::json>& full_runs = {});

// The verdict cells' HTML for a probe result: one line per headline figure.
std::string RenderFigures(std::string_view probe, const nlohmann::json& result);

}  // namespace hostperf::exporter
