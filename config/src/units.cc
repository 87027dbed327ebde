#include "hostperf/config/units.h"

#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>

namespace hostperf::config {
namespace {

// 128-bit intermediate so that "number * unit" never overflows before we can
// check it. __extension__ keeps -Wpedantic quiet on GCC and Clang.
__extension__ using Uint128 = unsigned __int128;

struct Unit {
  std::string_view name;
  std::uint64_t factor;  // nanoseconds or bytes
};

constexpr std::uint64_t kNs = 1;
constexpr std::uint64_t kUs = 1000 * kNs;
constexpr std::uint64_t kMs = 1000 * kUs;
constexpr std::uint64_t kSec = 1000 * kMs;
constexpr std::uint64_t kMin = 60 * kSec;
constexpr std::uint64_t kHour = 60 * kMin;

constexpr std::array kDurationUnits = {
    Unit{"us", kUs},      Unit{"ms", kMs},       Unit{"s", kSec},  Unit{"sec", kSec}, Unit{"secs", kSec},
    Unit{"second", kSec}, Unit{"seconds", kSec}, Unit{"m", kMin},  Unit{"min", kMin}, Unit{"mins", kMin},
    Unit{"minute", kMin}, Unit{"minutes", kMin}, Unit{"h", kHour}, Unit{"hr", kHour}, Unit{"hrs", kHour},
    Unit{"hour", kHour},  Unit{"hours", kHour},
};

constexpr std::uint64_t kB = 1;
constexpr std::uint64_t kK = 1024 * kB;
constexpr std::uint64_t kM = 1024 * kK;
constexpr std::uint64_t kG = 1024 * kM;
constexpr std::uint64_t kT = 1024 * kG;

constexpr std::array kSizeUnits = {
    Unit{"b", kB},         Unit{"byte", kB},      Unit{"bytes", kB},    Unit{"k", kK},         Unit{"kb", kK},
    Unit{"kilobyte", kK},  Unit{"kilobytes", kK}, Unit{"m", kM},        Unit{"mb", kM},        Unit{"megabyte", kM},
    Unit{"megabytes", kM}, Unit{"g", kG},         Unit{"gb", kG},       Unit{"gigabyte", kG},  Unit{"gigabytes", kG},
    Unit{"t", kT},         Unit{"tb", kT},        Unit{"terabyte", kT}, Unit{"terabytes", kT},
};

// Canonical spellings for formatting, largest first.
constexpr std::array kDurationFormatUnits = {
    Unit{"h", kHour}, Unit{"min", kMin}, Unit{"s", kSec}, Unit{"ms", kMs}, Unit{"us", kUs},
};
constexpr std::array kSizeFormatUnits = {
    Unit{"tb", kT}, Unit{"gb", kG}, Unit{"mb", kM}, Unit{"kb", kK}, Unit{"b", kB},
};

// Describes one grammar (durations or sizes) so both parsers share the code.
struct Grammar {
  std::string_view what;       // "duration" / "size"
  std::string_view unit_hint;  // listed in the unknown-unit message
  std::string_view example;    // shown when there is no number at all
  std::string_view max_text;   // shown on overflow
  std::uint64_t bare_factor;   // factor of a bare number
  std::uint64_t max_value;
  std::span<const Unit> units;
};

constexpr Grammar kDurationGrammar{
    .what = "duration",
    .unit_hint = "use s, min, h, ms, us",
    .example = "5min",
    .max_text = "about 2562047h",
    .bare_factor = kSec,
    .max_value = static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max()),
    .units = kDurationUnits,
};

constexpr Grammar kSizeGrammar{
    .what = "size",
    .unit_hint = "use b, kb, mb, gb, tb",
    .example = "64mb",
    .max_text = "18446744073709551615 bytes",
    .bare_factor = kB,
    .max_value = std::numeric_limits<std::uint64_t>::max(),
    .units = kSizeUnits,
};

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// Parses "<digits>[.<digits>][ ]<unit>" into an integer count of the
// grammar's base unit (ns or bytes), rounding a fraction to the nearest one.
Result<std::uint64_t> ParseQuantity(std::string_view input, const Grammar& g) {
  const auto fail = [&](std::string_view why) {
    std::string message = "invalid ";
    message.append(g.what).append(" \"").append(input).append("\": ").append(why);
    return Result<std::uint64_t>::Error(std::move(message));
  };

  std::string_view s = Trim(input);
  if (s.empty()) return fail("empty");
  if (s.front() == '-') return fail(std::string("negative ") + std::string(g.what) + "s are not allowed");
  if (!IsDigit(s.front())) {
    return fail(std::string("expected a number with an optional unit, like \"") + std::string(g.example) + "\"");
  }

  // Integer part; saturate once it is clearly out of range.
  constexpr Uint128 kSaturated = Uint128{1} << 64;
  Uint128 whole = 0;
  std::size_t pos = 0;
  for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
    if (whole < kSaturated) whole = whole * 10 + static_cast<unsigned>(s[pos] - '0');
  }

  // Fraction: digits beyond the 18th are dropped; with the largest factor
  // (1h = 3.6e12 ns) they are worth far less than one ns or byte.
  Uint128 fraction = 0;
  Uint128 scale = 1;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    if (pos >= s.size() || !IsDigit(s[pos])) return fail("malformed number");
    int digits = 0;
    for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
      if (digits < 18) {
        fraction = fraction * 10 + static_cast<unsigned>(s[pos] - '0');
        scale *= 10;
        ++digits;
      }
    }
  }
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) return fail("malformed number");

  std::string_view unit_text = Trim(s.substr(pos));
  std::uint64_t factor = g.bare_factor;
  if (!unit_text.empty()) {
    bool found = false;
    for (const Unit& unit : g.units) {
      if (EqualsIgnoreCase(unit_text, unit.name)) {
        factor = unit.factor;
        found = true;
        break;
      }
    }
    if (!found) {
      return fail(std::string("unknown unit \"") + std::string(unit_text) + "\" (" + std::string(g.unit_hint) + ")");
    }
  }

  const Uint128 total = whole * factor + (fraction * factor + scale / 2) / scale;
  if (whole >= kSaturated || total > g.max_value) {
    return fail(std::string("too large (the maximum is ") + std::string(g.max_text) + ")");
  }
  return static_cast<std::uint64_t>(total);
}

// Largest canonical unit that renders the value as an integer; the last unit
// divides everything except sub-microsecond durations, which get decimals.
std::string FormatQuantity(std::uint64_t value, std::span<const Unit> units, std::string_view zero) {
  if (value == 0) return std::string(zero);
  for (const Unit& unit : units) {
    if (value % unit.factor == 0) return std::to_string(value / unit.factor) + std::string(unit.name);
  }
  // Only reachable for durations that are not whole microseconds.
  const Unit& smallest = units.back();
  std::string fraction = std::to_string(value % smallest.factor);
  const std::size_t width = std::to_string(smallest.factor).size() - 1;
  fraction.insert(0, width - fraction.size(), '0');
  while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  return std::to_string(value / smallest.factor) + "." + fraction + std::string(smallest.name);
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text) {
  Result<std::uint64_t> ns = ParseQuantity(text, kDurationGrammar);
  if (!ns) return Result<Duration>::Error(ns.error());
  return Duration(static_cast<Duration::rep>(*ns));
}

Result<std::uint64_t> ParseSize(std::string_view text) { return ParseQuantity(text, kSizeGrammar); }

std::string FormatDuration(Duration d) {
  if (d.count() < 0) {
    // Not accepted by ParseDuration, but still rendered readably for messages.
    const auto magnitude = static_cast<std::uint64_t>(-(d.count() + 1)) + 1;
    return "-" + FormatQuantity(magnitude, kDurationFormatUnits, "0s");
  }
  return FormatQuantity(static_cast<std::uint64_t>(d.count()), kDurationFormatUnits, "0s");
}

std::string FormatSize(std::uint64_t bytes) { return FormatQuantity(bytes, kSizeFormatUnits, "0b"); }

}  // namespace hostperf::config
