#include "hostperf/probes/probe.h"

#include <prometheus/registry.h>

#include <cmath>
#include <cstdio>

namespace hostperf::probes {

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

ProbeOutcome ProbeOutcome::Failure(const hostperf::Failure& failure, nlohmann::json result) {
  return Failure(failure.reason, failure.message, std::move(result));
}

ProbeOutcome ProbeOutcome::Skipped(std::string reason, std::string message) {
  ProbeOutcome outcome;
  outcome.status = Status::kSkipped;
  outcome.reason = std::move(reason);
  outcome.message = std::move(message);
  return outcome;
}

std::string_view ToString(ProbeOutcome::Status status) {
  switch (status) {
    case ProbeOutcome::Status::kSuccess:
      return "success";
    case ProbeOutcome::Status::kFailure:
      return "failure";
    case ProbeOutcome::Status::kSkipped:
      break;
  }
  return "skipped";
}

ProbeOutcome::Status ParseOutcomeStatus(std::string_view name) {
  if (name == "success") return ProbeOutcome::Status::kSuccess;
  if (name == "skipped") return ProbeOutcome::Status::kSkipped;
  return ProbeOutcome::Status::kFailure;
}

ProbeOutcome OutcomeFromJson(const nlohmann::json& outcome) {
  const auto text = [&](const char* key) {
    return outcome.is_object() && outcome.contains(key) && outcome[key].is_string() ? outcome[key].get<std::string>()
                                                                                    : std::string();
  };
  ProbeOutcome out;
  out.status = ParseOutcomeStatus(text("status"));
  out.reason = text("reason");
  out.message = text("message");
  return out;
}

template <typename Context>
ProbeOutcome Probe::Guarded(const Context& context, ProbeOutcome (Probe::*measure)(const Context&)) {
  std::unique_lock lock(run_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    return ProbeOutcome::Skipped("busy", "another " + std::string(Name()) + " run is in progress");
  }
  try {
    if (context.budget != nullptr) return (this->*measure)(context);
    own_budget_.SetLimits(context.budget_limits);
    Context lent = context;
    lent.budget = &own_budget_;
    return (this->*measure)(lent);
  } catch (const std::exception& e) {
    return ProbeOutcome::Failure("internal_error", e.what());
  } catch (...) {
    return ProbeOutcome::Failure("internal_error", "unknown exception");
  }
}

ProbeOutcome Probe::RunScheduled(const ScheduledContext& context) { return Guarded(context, &Probe::MeasureScheduled); }

ProbeOutcome Probe::RunFull(const FullRunContext& context) { return Guarded(context, &Probe::MeasureFull); }

Result<std::chrono::nanoseconds> ParseDurationOption(const nlohmann::json& value) {
  using R = Result<std::chrono::nanoseconds>;
  if (value.is_string()) {
    auto parsed = config::ParseDuration(value.get<std::string>());
    if (!parsed) return R::Error(parsed.error());
    return *parsed;
  }
  if (value.is_number()) {
    const double seconds = value.get<double>();
    // Written so that NaN fails too; a year bounds the conversion.
    if (!(seconds >= 0 && seconds <= 365.0 * 86400)) {
      return R::Error("expected a number of seconds from 0 to a year, got " + value.dump());
    }
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
  }
  return R::Error("expected a duration such as \"60s\" or a number of seconds, got " + std::string(value.type_name()));
}

namespace {

// Set once by main() before any thread starts.
struct DropIn {
  std::string command;
  std::string tool;
};
DropIn& CurrentDropIn() {
  static DropIn drop_in;
  return drop_in;
}

}  // namespace

std::string CommandLabel(std::string_view command) {
  const DropIn& drop_in = CurrentDropIn();
  if (!drop_in.tool.empty() && drop_in.command == command) return drop_in.tool;
  return "hostperf " + std::string(command);
}

void SetDropIn(std::string_view command, std::string_view tool) {
  CurrentDropIn() = DropIn{std::string(command), std::string(tool)};
}

int CommandExitCode(std::string_view command, const ProbeOutcome& outcome) {
  if (outcome.status == ProbeOutcome::Status::kSuccess) return 0;
  std::fprintf(stderr, "%s: %s: %s\n", CommandLabel(command).c_str(), outcome.reason.c_str(), outcome.message.c_str());
  return 1;
}

void PrintJsonResult(const ProbeOutcome& outcome) {
  const nlohmann::json& result = outcome.result.is_null() ? nlohmann::json::object() : outcome.result;
  std::printf("%s\n", result.dump(2).c_str());
  std::fflush(stdout);
}

std::shared_ptr<prometheus::Registry> RegistryFor(const ProbeDeps& deps) {
  if (deps.registry == nullptr) return std::make_shared<prometheus::Registry>();
  // Aliasing, with no owner: the daemon's registry outlives its probes.
  return std::shared_ptr<prometheus::Registry>(std::shared_ptr<void>(), deps.registry);
}

}  // namespace hostperf::probes
