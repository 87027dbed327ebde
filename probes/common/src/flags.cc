#include "hostperf/probes/flags.h"

#include <optional>

namespace hostperf::probes {
namespace {

const FlagSpec* FindLong(std::span<const FlagSpec> specs, std::string_view name) {
  for (const FlagSpec& spec : specs) {
    if (!spec.name.empty() && spec.name == name) return &spec;
  }
  return nullptr;
}

const FlagSpec* FindShort(std::span<const FlagSpec> specs, char letter) {
  for (const FlagSpec& spec : specs) {
    if (spec.short_names.find(letter) != std::string_view::npos) return &spec;
  }
  return nullptr;
}

}  // namespace

Result<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagGrammar& grammar) {
  using R = Result<ParsedFlags>;
  ParsedFlags out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.positional.insert(out.positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (arg.empty() || arg[0] != '-') {
      if (grammar.stop_at_positional) {
        out.positional.insert(out.positional.end(), args.begin() + static_cast<long>(i), args.end());
        break;
      }
      out.positional.push_back(arg);
      continue;
    }
    const bool is_long = arg.starts_with("--");
    std::string spelled;
    std::optional<std::string> inline_value;  // "--opt=value" or "-xvalue"
    const FlagSpec* spec = nullptr;
    if (is_long) {
      const auto equals = arg.find('=');
      spelled = arg.substr(0, equals);
      if (equals != std::string::npos) inline_value = arg.substr(equals + 1);
      spec = FindLong(grammar.specs, std::string_view(spelled).substr(2));
    } else if (arg.size() >= 2) {
      spelled = arg.substr(0, 2);
      if (arg.size() > 2) inline_value = arg.substr(2);
      spec = FindShort(grammar.specs, arg[1]);
      // A boolean short flag with letters after it is not that flag (no bundling).
      if (spec != nullptr && !spec->takes_value && inline_value) spec = nullptr;
    }
    if (spec == nullptr) return R::Error("unknown option \"" + arg + "\"");
    FlagValue flag{spec, spelled, ""};
    if (spec->takes_value) {
      if (inline_value) {
        flag.value = *inline_value;
      } else if (i + 1 < args.size()) {
        flag.value = args[++i];
      } else {
        return R::Error(spelled + " needs " + std::string(spec->needs));
      }
    } else if (inline_value) {
      return R::Error(spelled + " takes no value");
    }
    out.flags.push_back(std::move(flag));
    if (spec->stops) break;
  }
  return out;
}

}  // namespace hostperf::probes
