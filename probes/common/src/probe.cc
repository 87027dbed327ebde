#include "hostperf/probes/probe.h"

namespace hostperf::probes {

std::string_view ToString(RunMode mode) { return mode == RunMode::kFull ? "full" : "scheduled"; }

ProbeOutcome ProbeOutcome::Success(nlohmann::json result) {
  ProbeOutcome outcome;
  outcome.result = std::move(result);
  return outcome;
}

ProbeOutcome ProbeOutcome::Failure(std::string reason, std::string message, nlohmann::json result) {
  ProbeOutcome outcome;
  outcome.status = Status::kFailure;
  outcome.reason = std::move(reason);
  outcome.message = std::move(message);
  outcome.result = std::move(result);
  return outcome;
}

ProbeOutcome ProbeOutcome::Skipped(std::string reason, std::string message) {
  ProbeOutcome outcome;
  outcome.status = Status::kSkipped;
  outcome.reason = std::move(reason);
  outcome.message = std::move(message);
  return outcome;
}

}  // namespace hostperf::probes
