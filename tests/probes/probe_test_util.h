#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::test_support {

// A run of `probe` as the full-run path makes it: `options` (JSON, as the
// run API or CLI give them) parsed once by the probe's module; bad options
// fail with bad_options and nothing runs.
inline ProbeOutcome RunParsed(Probe& probe, RunContext context, const nlohmann::json& options) {
  auto parsed = ParseProbeOptions(probe.Name(), options);
  if (!parsed) return ProbeOutcome::Failure(parsed.failure());
  context.options = std::move(parsed).value();
  return probe.Run(context);
}

}  // namespace hostperf::probes::test_support
