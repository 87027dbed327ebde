#include "hostperf/runs/full_run.h"

#include <algorithm>
#include <exception>

#include "hostperf/config/units.h"

namespace hostperf::runs {
namespace {

using nlohmann::json;

// The JSON type name for error messages ("got number").
std::string TypeName(const json& value) { return value.type_name(); }

}  // namespace

Result<FullRunRequest> ParseFullRunRequest(const json& body, std::optional<std::chrono::nanoseconds> max_duration) {
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
    return R::Error("probes: expected a non-empty list of probe names (known: " + probes::KnownProbeNames() + ")");
  }
  for (const json& name : *probes_it) {
    if (!name.is_string()) return R::Error("probes: expected strings, got " + TypeName(name));
    const std::string probe = name.get<std::string>();
    if (probes::FindProbe(probe) == nullptr) {
      return R::Error("probes: unknown probe \"" + probe + "\" (known: " + probes::KnownProbeNames() + ")");
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
    if (max_duration && parsed.value() > *max_duration) {
      return R::Error("duration: " + it->get<std::string>() + " is longer than this host's api.max_run_duration (" +
                      config::FormatDuration(*max_duration) + ")");
    }
    duration = parsed.value();
    request.duration = it->get<std::string>();
  }

  json& options = request.options;
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
    auto parsed = probes::ParseProbeOptions(probe, options.value(probe, json()), duration);
    if (!parsed) return R::Error(parsed.error());
    request.parsed[probe] = std::move(parsed).value();
  }
  return R(std::move(request));
}

probes::FullRunContext FullRunContextFor(const config::Config& config, std::string_view probe,
                                         std::shared_ptr<const probes::ProbeOptions> options,
                                         const std::atomic<bool>* cancel, FullRunCallbacks callbacks) {
  probes::FullRunContext context = probes::MakeFullRunContext(config, probe);
  context.deadline = callbacks.deadline;
  context.cancel = cancel;
  context.options = std::move(options);
  context.on_progress = std::move(callbacks.on_progress);
  context.on_report = std::move(callbacks.on_report);
  return context;
}

probes::ProbeOutcome RunFullProbe(probes::Probe& probe, const config::Config& config,
                                  std::shared_ptr<const probes::ProbeOptions> options, const std::atomic<bool>* cancel,
                                  FullRunCallbacks callbacks) {
  try {
    return probe.RunFull(FullRunContextFor(config, probe.Name(), std::move(options), cancel, std::move(callbacks)));
  } catch (const std::exception& e) {  // a config without the probe's section
    return probes::ProbeOutcome::Failure("internal_error", e.what());
  }
}

}  // namespace hostperf::runs
