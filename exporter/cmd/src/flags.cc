#include "hostperf/cmd/flags.h"

namespace hostperf::exporter {

std::optional<std::string> ParsedFlags::Get(const std::string& name) const {
  const auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

Result<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagSpec& spec) {
  using R = Result<ParsedFlags>;
  ParsedFlags parsed;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      parsed.positional.push_back(arg);
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (spec.boolean.count(name) > 0) {
      if (eq != std::string::npos) {
        const std::string value = arg.substr(eq + 1);
        if (value == "true") {
          parsed.set_booleans.insert(name);
        } else if (value != "false") {
          return R::Error("flag --" + name + " takes true or false, got \"" + value + "\"");
        }
      } else {
        parsed.set_booleans.insert(name);
      }
      continue;
    }
    if (spec.valued.count(name) == 0) return R::Error("unknown flag --" + name + " (see --help)");
    if (eq != std::string::npos) {
      parsed.values[name] = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      parsed.values[name] = args[++i];
    } else {
      return R::Error("flag --" + name + " needs a value");
    }
  }
  return parsed;
}

}  // namespace hostperf::exporter
