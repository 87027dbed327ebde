#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hostperf/base/result.h"

namespace hostperf::exporter {

// Long flags as Prometheus exporters take them: "--name=value" or
// "--name value"; boolean flags take no value ("--config.check").
struct FlagSpec {
  std::set<std::string> valued;   // e.g. "web.listen-address"
  std::set<std::string> boolean;  // e.g. "config.check"
};

struct ParsedFlags {
  std::map<std::string, std::string> values;
  std::set<std::string> set_booleans;
  std::vector<std::string> positional;

  std::optional<std::string> Get(const std::string& name) const;
  bool Has(const std::string& name) const { return set_booleans.count(name) > 0; }
};

Result<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagSpec& spec);

}  // namespace hostperf::exporter
