// The probe set of the binaries under test, read from the registry they are
// built from (one module per probes/<name>/ folder): the central integration
// tests derive their lists of probes and commands here instead of naming the
// probes, so that adding or removing a probe folder changes no central test.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "hostperf/probes/probe.h"

namespace hostperf::testing {

// Every registered probe's name, in folder order.
inline std::vector<std::string> RegisteredProbes() {
  std::vector<std::string> names;
  for (const probes::ProbeModule* module : probes::AllProbes()) names.emplace_back(module->name);
  return names;
}

// Every registered probe's `hostperf <command>` name, in folder order.
inline std::vector<std::string> ProbeCommands() {
  std::vector<std::string> commands;
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    if (!module->command.name.empty()) commands.emplace_back(module->command.name);
  }
  return commands;
}

// A [probes.<name>] section for every registered probe: its `lines` from
// `sections` when listed there (keys of probes not registered are ignored),
// else `otherwise`. Each part ends in a newline.
inline std::string ProbeSectionsToml(const std::map<std::string, std::string>& sections, const std::string& otherwise) {
  std::string toml;
  for (const std::string& name : RegisteredProbes()) {
    const auto it = sections.find(name);
    toml += "[probes." + name + "]\n" + (it == sections.end() ? otherwise : it->second);
  }
  return toml;
}

// Every registered probe disabled (full runs still work for disabled
// probes), with `extra` lines for some (the net responder's port, which it
// binds even then).
inline std::string DisabledProbesToml(const std::map<std::string, std::string>& extra = {}) {
  std::map<std::string, std::string> sections;
  for (const auto& [name, lines] : extra) sections[name] = "enabled = false\n" + lines;
  return ProbeSectionsToml(sections, "enabled = false\n");
}

}  // namespace hostperf::testing
