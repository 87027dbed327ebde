#include <mutex>

#include "hostperf/probes/cpu/module.h"
#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/memory/module.h"
#include "hostperf/probes/net/module.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes {

namespace {

std::vector<const ProbeModule*>& Modules() {
  // Adding a probe: a folder under probes/ and one line here.
  static std::vector<const ProbeModule*> modules = {
      &cpu::kModule,
      &disk::kModule,
      &memory::kModule,
      &net::kModule,
  };
  return modules;
}

// Rebuilt when a module registers; registration happens before main().
std::vector<config::SectionSchema>& Sections() {
  static std::vector<config::SectionSchema> sections;
  return sections;
}

}  // namespace

std::span<const ProbeModule* const> AllProbes() { return Modules(); }

const ProbeModule* FindProbe(std::string_view name) {
  for (const ProbeModule* module : Modules()) {
    if (module->name == name) return module;
  }
  return nullptr;
}

bool RegisterProbe(const ProbeModule& module) {
  Modules().push_back(&module);
  Sections().clear();
  return true;
}

std::span<const config::SectionSchema> ConfigSections() {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::vector<config::SectionSchema>& sections = Sections();
  if (sections.empty()) {
    for (const ProbeModule* module : Modules()) sections.push_back(module->config_section());
  }
  return sections;
}

config::Config DefaultConfig() { return config::Defaults(ConfigSections()); }

Result<config::Config> LoadConfigString(std::string_view toml, std::string_view source) {
  return config::LoadString(toml, source, ConfigSections());
}

Result<config::Config> LoadConfigFile(const std::filesystem::path& path) {
  return config::LoadFile(path, ConfigSections());
}

std::string KnownProbeNames() {
  std::string names;
  for (const ProbeModule* module : Modules()) names += (names.empty() ? "" : ", ") + std::string(module->name);
  return names;
}

Result<std::shared_ptr<const ProbeOptions>> ParseProbeOptions(std::string_view probe, const nlohmann::json& options,
                                                              std::optional<std::chrono::nanoseconds> duration) {
  using R = Result<std::shared_ptr<const ProbeOptions>>;
  const ProbeModule* module = FindProbe(probe);
  if (module == nullptr) {
    return R::Error("bad_options", "unknown probe \"" + std::string(probe) + "\" (known: " + KnownProbeNames() + ")");
  }
  const std::string prefix = "options." + std::string(probe) + ": ";
  if (!options.is_null() && !options.is_object()) {
    return R::Error("bad_options", prefix + "expected a JSON object, got " + options.type_name());
  }
  if (module->parse_options == nullptr) {
    if (options.is_object() && !options.empty()) {
      return R::Error("bad_options", prefix + "the " + std::string(probe) + " probe takes no options (got \"" +
                                         options.begin().key() + "\")");
    }
    return std::shared_ptr<const ProbeOptions>();
  }
  auto parsed = module->parse_options(options, duration);
  if (!parsed) return R::Error("bad_options", prefix + parsed.error());
  return parsed;
}

RunContext MakeRunContext(const config::Config& config, std::string_view probe, RunMode mode) {
  RunContext context;
  context.mode = mode;
  const config::ProbeConfig& section = config.Section(probe);
  context.settings = section.settings;
  context.schedule = section.schedule;
  context.budget_limits = config.budget;
  return context;
}

std::vector<std::string> ConfigWarnings(const config::Config& config) {
  std::vector<std::string> warnings;
  for (const ProbeModule* module : Modules()) {
    if (module->config_warnings == nullptr) continue;
    const config::ProbeConfig& section = config.Section(module->name);
    if (!section.schedule.enabled) continue;
    for (std::string& warning : module->config_warnings(section)) {
      warnings.push_back("probes." + std::string(module->name) + ": " + std::move(warning));
    }
  }
  return warnings;
}

std::vector<Figure> HeadlineFigures(std::string_view probe, const nlohmann::json& result) {
  const ProbeModule* module = FindProbe(probe);
  if (module == nullptr || module->figures == nullptr || !result.is_object()) return {};
  return module->figures(result);
}

}  // namespace hostperf::probes
