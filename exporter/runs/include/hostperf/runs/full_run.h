#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::runs {

// The one full-run code path shared by the CLI (`hostperf cpu|io|memory|net`)
// and the run API: options parsed once by the probe's module, the
// FullRunContext and the call.

// A run API body: {"probes": [...], "duration": "60s", "options": {"disk": {...}}}.
struct FullRunRequest {
  std::vector<std::string> probes;  // in the order given, no duplicates
  // The body's "options" and "duration" as given, for the run history.
  nlohmann::json options = nlohmann::json::object();
  std::optional<std::string> duration;
  // Probe -> its parsed options (null: the defaults).
  std::map<std::string, std::shared_ptr<const probes::ProbeOptions>> parsed;
};
// Parses and validates a body (unknown keys, unknown probes, wrong types and
// bad probe options are errors with a reason). With `max_duration` (the
// daemon's api.max_run_duration), a longer "duration" is an error.
Result<FullRunRequest> ParseFullRunRequest(const nlohmann::json& body,
                                           std::optional<std::chrono::nanoseconds> max_duration = std::nullopt);

struct FullRunCallbacks {
  std::function<void(const probes::Progress&)> on_progress;
  std::function<void(const nlohmann::json&)> on_report;
  // The run stops (outcome "timeout") at this point (api.max_run_duration
  // after the full run started); the CLI sets none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// The context of one probe's full run.
probes::FullRunContext FullRunContextFor(const config::Config& config, std::string_view probe,
                                         std::shared_ptr<const probes::ProbeOptions> options,
                                         const std::atomic<bool>* cancel, FullRunCallbacks callbacks = {});

// Runs the probe's full mode with parsed options. Never throws: exceptions
// are an "internal_error" (Probe::RunFull).
probes::ProbeOutcome RunFullProbe(probes::Probe& probe, const config::Config& config,
                                  std::shared_ptr<const probes::ProbeOptions> options, const std::atomic<bool>* cancel,
                                  FullRunCallbacks callbacks = {});

}  // namespace hostperf::runs
