#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "hostperf/exporter/scheduler.h"

namespace hostperf::exporter {

std::string HtmlEscape(std::string_view text);

// Plain HTML, no external assets: every probe with its schedule, last run and
// last result, and links to the other endpoints.
std::string RenderLandingPage(const std::vector<ProbeStatus>& probes, std::string_view telemetry_path,
                              std::string_view config_source, double now_unix_seconds);

}  // namespace hostperf::exporter
