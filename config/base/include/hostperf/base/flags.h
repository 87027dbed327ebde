#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"

namespace hostperf {

// The one command-line grammar of both executables, in two styles.
//
// kCommand, every `hostperf` command's:
//   --name=value and --name value for every valued option,
//   -x value and -xvalue for short valued options (gpcheckperf's -d/data),
//   --name and -x for boolean flags (a value given to one is an error),
//   "--" ends the options; the other arguments are positional.
//   Anything else starting with '-' is an unknown option.
// kExporter, hostperf_exporter's, as Prometheus exporters take theirs:
//   only "--" starts a flag ("-x" is positional), valued flags as above, a
//   boolean flag alone or with =true or =false (=false: as if not given);
//   errors say "flag --x".
struct FlagSpec {
  std::string_view name;         // long name without "--"; empty: none
  std::string_view short_names;  // each letter is a short name ("vV": -v and -V); empty: none
  bool takes_value = false;
  // The missing-value message's object: "--duration needs a value".
  std::string_view needs = "a value";
  // Parsing ends at this flag (--help: it wins over whatever follows).
  bool stops = false;

  // The caller's handle on this flag: the long name, else the short names.
  std::string_view id() const { return name.empty() ? short_names : name; }
  constexpr FlagSpec Stopping() const {
    FlagSpec spec = *this;
    spec.stops = true;
    return spec;
  }
};

// A boolean flag ("" for no long name or no short names).
constexpr FlagSpec Switch(std::string_view name, std::string_view short_names = "") {
  return FlagSpec{name, short_names, false, "a value", false};
}
// An option that takes a value; `needs` words its missing-value error.
constexpr FlagSpec Valued(std::string_view name, std::string_view short_names = "",
                          std::string_view needs = "a value") {
  return FlagSpec{name, short_names, true, needs, false};
}

struct FlagValue {
  const FlagSpec* spec = nullptr;
  std::string spelled;  // as given, without any "=value": "--duration", "-d"
  std::string value;    // empty for a boolean flag

  bool Is(std::string_view id) const { return spec->id() == id; }
};

struct ParsedFlags {
  std::vector<FlagValue> flags;  // in command-line order
  std::vector<std::string> positional;

  // The value of the last flag `id` given; nullopt when none was.
  std::optional<std::string> Get(std::string_view id) const;
  // Whether flag `id` was given.
  bool Has(std::string_view id) const;
};

enum class FlagStyle { kCommand, kExporter };

struct FlagGrammar {
  std::span<const FlagSpec> specs;
  // The first positional argument ends the options, and it and everything
  // after it are positional (`hostperf [global flags] COMMAND ...`).
  bool stop_at_positional = false;
  FlagStyle style = FlagStyle::kCommand;
};

// One-line errors. kCommand: unknown option "--x", --x needs a value, --x
// takes no value. kExporter: unknown flag --x (see --help), flag --x needs a
// value, flag --x takes true or false, got "y".
Result<ParsedFlags> ParseFlags(const std::vector<std::string>& args, const FlagGrammar& grammar);

}  // namespace hostperf
