#include "hostperf/runs/full_run.h"

#include <algorithm>
#include <exception>

#include "hostperf/config/units.h"

namespace hostperf::exporter {
namespace {

using nlohmann::json;

std::string KnownProbes() {
  std::string names;
  for (const auto& registration : probes::AllProbes()) {
    names += (names.empty() ? "" : ", ") + std::string(registration.name);
  }
  return names;
}

// The JSON type name for error messages ("got number").
std::string TypeName(const json& value) { return value.type_name(); }

}  // namespace

const probes::ProbeRegistration* FindProbeRegistration(std::string_view name) {
  for (const auto& registration : probes::AllProbes()) {
    if (registration.name == name) return &registration;
  }
  return nullptr;
}

Result<json> PrepareFullRunOptions(std::string_view probe, json options,
                                   std::optional<std::chrono::nanoseconds> duration) {
  using R = Result<json>;
  const probes::ProbeRegistration* registration = FindProbeRegistration(probe);
  if (registration == nullptr) {
    return R::Error("unknown probe \"" + std::string(probe) + "\" (known: " + KnownProbes() + ")");
  }
  const std::string prefix = "options." + std::string(probe);
  if (options.is_null()) options = json::object();
  if (!options.is_object()) return R::Error(prefix + ": expected a JSON object, got " + TypeName(options));
  if (duration && !options.contains("duration")) {
    switch (registration->duration_option) {
      case probes::DurationOption::kNone:
        break;
      case probes::DurationOption::kInterval:
        options["duration"] = config::FormatDuration(*duration);
        break;
      case probes::DurationOption::kSeconds:
        options["duration"] = std::chrono::duration<double>(*duration).count();
        break;
    }
  }
  if (registration->validate_options == nullptr) {
    if (!options.empty()) {
      return R::Error(prefix + ": the " + std::string(probe) + " probe takes no options (got \"" +
                      options.begin().key() + "\")");
    }
    return R(std::move(options));
  }
  if (std::string error = registration->validate_options(options); !error.empty()) {
    return R::Error(prefix + ": " + error);
  }
  return R(std::move(options));
}

Result<FullRunRequest> ParseFullRunRequest(const json& body) {
  using R = Result<FullRunRequest>;
  if (!body.is_object()) return R::Error("the body must be a JSON object, got " + TypeName(body));
  for (const auto& [key, value] : body.items()) {
    if (key != "probes" && key != "duration" && key != "options") {
      return R::Error("unknown key \"" + key + "\" (expected probes, duration, options)");
    }
  }
  FullRunRequest request;
  const auto probes_it = body.find("probes");
  if (probes_it == body.end()) return R::Error("probes: required, e.g. [\"cpu\", \"disk\"]");
  if (!probes_it->is_array() || probes_it->empty()) {
    return R::Error("probes: expected a non-empty list of probe names (known: " + KnownProbes() + ")");
  }
  for (const json& name : *probes_it) {
    if (!name.is_string()) return R::Error("probes: expected strings, got " + TypeName(name));
    const std::string probe = name.get<std::string>();
    if (FindProbeRegistration(probe) == nullptr) {
      return R::Error("probes: unknown probe \"" + probe + "\" (known: " + KnownProbes() + ")");
    }
    if (std::find(request.probes.begin(), request.probes.end(), probe) != request.probes.end()) {
      return R::Error("probes: \"" + probe + "\" is listed twice");
    }
    request.probes.push_back(probe);
  }

  std::optional<std::chrono::nanoseconds> duration;
  if (const auto it = body.find("duration"); it != body.end()) {
    if (!it->is_string()) return R::Error("duration: expected an interval such as \"60s\", got " + TypeName(*it));
    auto parsed = config::ParseDuration(it->get<std::string>());
    if (!parsed) return R::Error("duration: " + parsed.error());
    if (parsed.value().count() <= 0) return R::Error("duration: must be greater than 0");
    duration = parsed.value();
  }

  json options = json::object();
  if (const auto it = body.find("options"); it != body.end()) {
    if (!it->is_object()) return R::Error("options: expected an object of probe name -> options, got " + TypeName(*it));
    for (const auto& [probe, value] : it->items()) {
      if (std::find(request.probes.begin(), request.probes.end(), probe) == request.probes.end()) {
        return R::Error("options: \"" + probe + "\" is not one of the probes to run");
      }
      options[probe] = value;
    }
  }
  for (const std::string& probe : request.probes) {
    auto prepared = PrepareFullRunOptions(probe, options.value(probe, json()), duration);
    if (!prepared) return R::Error(prepared.error());
    request.options[probe] = std::move(prepared).value();
  }
  return R(std::move(request));
}

probes::RunContext MakeFullRunContext(std::shared_ptr<const config::Config> config, json options,
                                      const std::atomic<bool>* cancel, FullRunCallbacks callbacks) {
  probes::RunContext context;
  context.mode = probes::RunMode::kFull;
  context.cancel = cancel;
  context.config = std::move(config);
  context.options = std::move(options);
  context.on_progress = std::move(callbacks.on_progress);
  context.on_report = std::move(callbacks.on_report);
  return context;
}

probes::ProbeOutcome RunFullProbe(probes::Probe& probe, std::shared_ptr<const config::Config> config, json options,
                                  const std::atomic<bool>* cancel, FullRunCallbacks callbacks) {
  auto prepared = PrepareFullRunOptions(probe.Name(), std::move(options));
  if (!prepared) return probes::ProbeOutcome::Failure("bad_options", prepared.error());
  const probes::RunContext context =
      MakeFullRunContext(std::move(config), std::move(prepared).value(), cancel, std::move(callbacks));
  try {
    return probe.Run(context);
  } catch (const std::exception& e) {
    return probes::ProbeOutcome::Failure("internal_error", e.what());
  } catch (...) {
    return probes::ProbeOutcome::Failure("internal_error", "unknown exception");
  }
}

}  // namespace hostperf::exporter
