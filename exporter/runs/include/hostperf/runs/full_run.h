#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::exporter {

// The one full-run code path shared by the CLI (`hostperf cpu|io|memory|net`)
// and the run API: option validation, the RunContext and the call.

// A probe's registration by name; nullptr when no probe has that name.
const probes::ProbeRegistration* FindProbeRegistration(std::string_view name);

// Normalises (null -> {}) and validates a probe's full-run options. With a
// `duration`, a probe that has a run-length option gets it in its own
// spelling unless `options` already sets one. Errors name the probe and key.
Result<nlohmann::json> PrepareFullRunOptions(std::string_view probe, nlohmann::json options,
                                             std::optional<std::chrono::nanoseconds> duration = std::nullopt);

// A run API body: {"probes": [...], "duration": "60s", "options": {"disk": {...}}}.
struct FullRunRequest {
  std::vector<std::string> probes;                    // in the order given, no duplicates
  nlohmann::json options = nlohmann::json::object();  // probe -> validated options
};
// Parses and validates a body (unknown keys, unknown probes, wrong types and
// bad probe options are errors with a reason).
Result<FullRunRequest> ParseFullRunRequest(const nlohmann::json& body);

struct FullRunCallbacks {
  std::function<void(const probes::Progress&)> on_progress;
  std::function<void(const nlohmann::json&)> on_report;
};

// The context of one probe's full run.
probes::RunContext MakeFullRunContext(std::shared_ptr<const config::Config> config, nlohmann::json options,
                                      const std::atomic<bool>* cancel, FullRunCallbacks callbacks = {});

// Validates `options` and runs the probe's full mode. Never throws: bad
// options are a "bad_options" failure, exceptions an "internal_error".
probes::ProbeOutcome RunFullProbe(probes::Probe& probe, std::shared_ptr<const config::Config> config,
                                  nlohmann::json options, const std::atomic<bool>* cancel,
                                  FullRunCallbacks callbacks = {});

}  // namespace hostperf::exporter
