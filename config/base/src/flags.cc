#include "hostperf/base/flags.h"

#include <optional>

namespace hostperf {
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

std::optional<std::string> ParsedFlags::Get(std::string_view id) const {
  for (auto flag = flags.rbegin(); flag != flags.rend(); ++flag) {
    if (flag->Is(id)) return flag->value;
  }
  return std::nullopt;
}

bool ParsedFlags::Has(std::string_view id) const {
  for (const FlagValue& flag : flags) {
    if (flag.Is(id)) return true;
  }
  return false;
}

Result<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagGrammar& grammar) {
  using R = Result<ParsedFlags>;
  const bool exporter = grammar.style == FlagStyle::kExporter;
  ParsedFlags out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out.positional.insert(out.positional.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    const bool is_long = arg.starts_with("--");
    if (arg.empty() || arg[0] != '-' || (exporter && !is_long)) {
      if (grammar.stop_at_positional) {
        out.positional.insert(out.positional.end(), args.begin() + static_cast<long>(i), args.end());
        break;
      }
      out.positional.push_back(arg);
      continue;
    }
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
    if (spec == nullptr) {
      return R::Error(exporter ? "unknown flag " + spelled + " (see --help)" : "unknown option \"" + arg + "\"");
    }
    FlagValue flag{spec, spelled, ""};
    if (spec->takes_value) {
      if (inline_value) {
        flag.value = *inline_value;
      } else if (i + 1 < args.size()) {
        flag.value = args[++i];
      } else {
        return R::Error((exporter ? "flag " : "") + spelled + " needs " + std::string(spec->needs));
      }
    } else if (inline_value && exporter) {
      if (*inline_value == "false") continue;
      if (*inline_value != "true") {
        return R::Error("flag " + spelled + " takes true or false, got \"" + *inline_value + "\"");
      }
    } else if (inline_value) {
      return R::Error(spelled + " takes no value");
    }
    out.flags.push_back(std::move(flag));
    if (spec->stops) break;
  }
  return out;
}

}  // namespace hostperf
