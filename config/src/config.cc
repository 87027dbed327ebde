#include "hostperf/config/config.h"

#include <fcntl.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "hostperf/base/files.h"

namespace hostperf::config {
namespace {

// ---------------------------------------------------------------------------
// Small formatting helpers.

std::string TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string FormatNumber(double value) {
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) return "?";
  return std::string(buffer, end);
}

// Dotted key path as an operator would type it; keys that are not bare TOML
// keys (e.g. "a b") are quoted so the path stays unambiguous.
std::string JoinPath(std::string_view parent, std::string_view key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  std::string rendered = bare ? std::string(key) : "'" + std::string(key) + "'";
  if (parent.empty()) return rendered;
  return std::string(parent) + "." + rendered;
}

std::string Indexed(std::string_view path, std::size_t index) {
  return std::string(path) + "[" + std::to_string(index) + "]";
}

// ---------------------------------------------------------------------------
// Schema-driven reader. Every table is described by a list of Fields; a
// table's keys not in its list are "unknown key" errors. Errors are
// collected with their positions and the earliest one in the document wins,
// because toml++ tables iterate in key order, not document order.

struct Issue {
  toml::source_index line;
  toml::source_index column;
  std::string message;
};

// Remembers whether a key was present and valid, for cross-field checks.
struct Seen {
  const toml::node* node = nullptr;
  bool valid = false;
};

constexpr LowerBound kAtLeastOneSecond{std::chrono::nanoseconds(1s).count(), true};
constexpr LowerBound kAtLeastOneByte{1, true};

}  // namespace

namespace detail {

struct Field {
  std::string name;
  std::function<void(const toml::node& node, const std::string& path)> read;
};
using Fields = std::vector<Field>;

class Loader {
 public:
  friend class config::Schema;
  Loader(std::string_view source, std::span<const SectionSchema> sections) : source_(source), sections_(sections) {}

  void ReadRoot(const toml::table& root, Config* c) {
    const Fields fields = {
        String("state_directory", &c->state_directory),
        Section("api", {String("token_file", &c->api.token_file),
                        DurationField("max_run_duration", &c->api.max_run_duration, kAtLeastOneSecond)}),
        Section("budget",
                {
                    Number("cpu_seconds_per_hour", &c->budget.cpu_seconds_per_hour,
                           {0, std::numeric_limits<double>::max(), false, "(must be a finite number greater than 0)"}),
                    Size("disk_bytes_per_hour", &c->budget.disk_bytes_per_hour),
                    Size("net_bytes_per_hour", &c->budget.net_bytes_per_hour),
                    Number("busy_cpu_pressure", &c->budget.busy_cpu_pressure, {0, 100, true, "[0, 100]"}),
                    Number("busy_io_pressure", &c->budget.busy_io_pressure, {0, 100, true, "[0, 100]"}),
                }),
        Section("scheduler",
                {
                    DurationField("first_run_splay", &c->scheduler.first_run_splay, kAnyDuration),
                    Number("jitter", &c->scheduler.jitter, {0, 0.5, true, "[0, 0.5]"}),
                }),
        Section("probes", ProbeSections(c)),
        FullRuns(&c->full_runs),
    };
    ReadTable(root, "", fields);
    // A calendar run longer than the cap would be refused at every slot.
    if (const toml::node* node = root.at_path("full_runs.duration").node(); node != nullptr) {
      const auto duration = ParseDuration(c->full_runs.duration);
      if (duration && *duration > c->api.max_run_duration) {
        Invalid(*node, "full_runs.duration",
                c->full_runs.duration + " is longer than api.max_run_duration (" +
                    FormatDuration(c->api.max_run_duration) + ")");
      }
    }
  }

  // The earliest error in document order, formatted "source:line:column: ...".
  std::optional<std::string> FirstError() const {
    const auto first = std::min_element(issues_.begin(), issues_.end(), [](const Issue& a, const Issue& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    if (first == issues_.end()) return std::nullopt;
    return source_ + ":" + std::to_string(first->line) + ":" + std::to_string(first->column) + ": " + first->message;
  }

 private:
  // One field per registered section: the shared schedule keys plus the
  // section's own, declared by its module.
  Fields ProbeSections(Config* c) {
    Fields fields;
    for (const SectionSchema& section : sections_) {
      ProbeConfig& probe = c->probes.at(section.name);
      // Written into a fresh copy: the defaults' object may be shared.
      fields.push_back(Probe(section, &probe));
    }
    return fields;
  }

  // [full_runs]: its keys, then the checks that need several of them.
  Field FullRuns(FullRunsConfig* out) {
    return {"full_runs", [this, out](const toml::node& node, const std::string& path) {
              const toml::table* table = node.as_table();
              if (table == nullptr) return WrongType(node, path, "a table");
              FullRunsConfig runs;
              Seen every;
              Seen start;
              Seen window;
              Seen probes;
              const toml::node* options = nullptr;
              Fields fields = {
                  Bool("enabled", &runs.enabled),
                  DurationField("every", &runs.every, kAtLeastOneSecond, &every),
                  {"window_start",
                   [this, &runs, &start](const toml::node& value, const std::string& key_path) {
                     start = {&value, ReadWindowStart(value, key_path, &runs)};
                   }},
                  DurationField("window", &runs.window, kPositive, &window),
                  {"probes",
                   [this, &runs, &probes](const toml::node& value, const std::string& key_path) {
                     probes = {&value, ReadRunProbes(value, key_path, &runs.probes)};
                   }},
                  {"duration",
                   [this, &runs](const toml::node& value, const std::string& key_path) {
                     if (value.is_string() && value.as_string()->get().empty()) {  // none: the probes' own
                       runs.duration.clear();
                       return;
                     }
                     const auto d = ReadDuration(value, key_path, kPositive);
                     if (d) runs.duration = value.is_string() ? *value.value<std::string>() : FormatDuration(*d);
                   }},
                  {"options", [&options](const toml::node& value, const std::string&) { options = &value; }},
                  String("host", &runs.host),
              };
              ReadTable(*table, path, fields);
              CheckCalendar(runs, path, every, start, window);
              if (runs.enabled && runs.probes.empty() && (probes.node == nullptr || probes.valid)) {
                Invalid(probes.node != nullptr ? *probes.node : node, JoinPath(path, "probes"),
                        "list the probes to run when enabled, e.g. [\"disk\"]");
              }
              if (options != nullptr) ReadRunOptions(*options, JoinPath(path, "options"), &runs);
              *out = std::move(runs);
            }};
  }

  // "Ddd HH:MM" (Mon..Sun) or "HH:MM", UTC; sets window_start and window_anchor.
  bool ReadWindowStart(const toml::node& node, const std::string& path, FullRunsConfig* runs) {
    const auto* value = node.as_string();
    if (value == nullptr) {
      WrongType(node, path, "a string like \"Sun 02:00\"");
      return false;
    }
    static constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    const std::string& text = value->get();
    std::string_view rest = text;
    std::optional<int> weekday;
    if (rest.size() == 9 && rest[3] == ' ') {
      const auto day = std::find(std::begin(kDays), std::end(kDays), rest.substr(0, 3));
      if (day != std::end(kDays)) weekday = static_cast<int>(day - std::begin(kDays));
      rest.remove_prefix(4);
    }
    const auto digit = [&rest](std::size_t i) { return rest[i] >= '0' && rest[i] <= '9' ? rest[i] - '0' : -100; };
    const int hours = rest.size() == 5 && rest[2] == ':' ? digit(0) * 10 + digit(1) : -1;
    const int minutes = rest.size() == 5 && rest[2] == ':' ? digit(3) * 10 + digit(4) : -1;
    if ((text.size() != 5 && !weekday) || hours < 0 || hours > 23 || minutes < 0 || minutes > 59) {
      Invalid(node, path,
              "\"" + text + "\" is not \"Ddd HH:MM\" (Mon..Sun, 24-hour UTC, e.g. \"Sun 02:00\") or \"HH:MM\"");
      return false;
    }
    // 1970-01-01 was a Thursday: the first Sunday is day 3.
    const Duration day_start = weekday ? Duration(std::chrono::hours(24 * ((*weekday + 3) % 7))) : Duration(0);
    runs->window_start = text;
    runs->window_anchor = day_start + std::chrono::hours(hours) + std::chrono::minutes(minutes);
    return true;
  }

  // Cross-field checks: a weekday start needs whole weeks and a daily one a
  // period that divides a day (so windows keep their weekday or time of day),
  // and the window fits in the period.
  void CheckCalendar(const FullRunsConfig& runs, const std::string& path, const Seen& every, const Seen& start,
                     const Seen& window) {
    if ((every.node != nullptr && !every.valid) || (start.node != nullptr && !start.valid) ||
        (window.node != nullptr && !window.valid)) {
      return;  // already reported
    }
    const toml::node* at = every.node != nullptr ? every.node : start.node;
    const bool weekly = runs.window_start.size() > 5;
    constexpr Duration kDay = 24h;
    constexpr Duration kWeek = 7 * kDay;
    if (at != nullptr && weekly && runs.every % kWeek != Duration(0)) {
      Invalid(*at, JoinPath(path, every.node != nullptr ? "every" : "window_start"),
              FormatDuration(runs.every) + " is not a whole number of weeks, which a weekday window_start (\"" +
                  runs.window_start + "\") needs; use \"HH:MM\" for shorter periods");
      return;
    }
    if (at != nullptr && !weekly && kDay % runs.every != Duration(0)) {
      Invalid(*at, JoinPath(path, every.node != nullptr ? "every" : "window_start"),
              FormatDuration(runs.every) + " does not divide a day, which a daily window_start (\"" +
                  runs.window_start + "\") needs (e.g. 24h, 6h, 20s); use \"Ddd HH:MM\" for weekly runs");
      return;
    }
    if (runs.window > runs.every) {
      const toml::node* where = window.node != nullptr ? window.node : every.node;
      if (where != nullptr) {
        Invalid(*where, JoinPath(path, window.node != nullptr ? "window" : "every"),
                "the window (" + FormatDuration(runs.window) + ") is longer than the period (" +
                    FormatDuration(runs.every) + ")");
      }
    }
  }

  // Registered probe names, no duplicates.
  bool ReadRunProbes(const toml::node& node, const std::string& path, std::vector<std::string>* out) {
    std::vector<std::string> names;
    const std::size_t issues = issues_.size();
    StringList("probes", &names).read(node, path);
    if (issues_.size() != issues) return false;
    const toml::array& array = *node.as_array();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const bool known = std::any_of(sections_.begin(), sections_.end(),
                                     [&](const SectionSchema& section) { return section.name == names[i]; });
      if (!known) {
        Invalid(*array.get(i), Indexed(path, i), "unknown probe \"" + names[i] + "\" (known: " + KnownSections() + ")");
        return false;
      }
      if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
          names.begin() + static_cast<std::ptrdiff_t>(i)) {
        Invalid(*array.get(i), Indexed(path, i), "\"" + names[i] + "\" is listed twice");
        return false;
      }
    }
    *out = std::move(names);
    return true;
  }

  // [full_runs.options.<probe>]: kept as JSON for the probe's own parser; the
  // probe must be one of full_runs.probes.
  void ReadRunOptions(const toml::node& node, const std::string& path, FullRunsConfig* runs) {
    const toml::table* table = node.as_table();
    if (table == nullptr) return WrongType(node, path, "a table of probe name -> options");
    for (auto&& [key, value] : *table) {
      const std::string probe(key.str());
      const std::string child = JoinPath(path, probe);
      if (std::find(runs->probes.begin(), runs->probes.end(), probe) == runs->probes.end()) {
        Fail(key.source(), child + ": \"" + probe + "\" is not one of full_runs.probes");
        continue;
      }
      const toml::table* options = value.as_table();
      if (options == nullptr) {
        WrongType(value, child, "a table");
        continue;
      }
      std::ostringstream json;
      json << toml::json_formatter(
          *options, toml::format_flags::quote_dates_and_times | toml::format_flags::quote_infinities_and_nans);
      runs->options_json[probe] = json.str();
    }
  }

  std::string KnownSections() const {
    std::string names;
    for (const SectionSchema& section : sections_) names += (names.empty() ? "" : ", ") + section.name;
    return names;
  }

  void Fail(const toml::source_region& where, std::string message) {
    issues_.push_back({where.begin.line, where.begin.column, std::move(message)});
  }
  void Invalid(const toml::node& node, const std::string& path, const std::string& what) {
    Fail(node.source(), path + ": " + what);
  }
  void WrongType(const toml::node& node, const std::string& path, std::string_view expected) {
    Invalid(node, path, "expected " + std::string(expected) + ", got " + TypeName(node));
  }

  void ReadTable(const toml::table& table, const std::string& path, const Fields& fields) {
    for (auto&& [key, node] : table) {
      const std::string_view name = key.str();
      const std::string child = JoinPath(path, name);
      const auto field = std::find_if(fields.begin(), fields.end(), [name](const Field& f) { return f.name == name; });
      if (field == fields.end()) {
        Fail(key.source(), "unknown key \"" + child + "\"");
      } else {
        field->read(node, child);
      }
    }
  }

  Field Section(std::string_view name, Fields fields) {
    return {std::string(name), [this, fields = std::move(fields)](const toml::node& node, const std::string& path) {
              if (const toml::table* table = node.as_table()) {
                ReadTable(*table, path, fields);
              } else {
                WrongType(node, path, "a table");
              }
            }};
  }

  // The keys every probe section shares (`seen` notes which were given).
  static Fields ScheduleFields(Loader& loader, ProbeSchedule* schedule, Seen* interval, Seen* timeout) {
    return {
        loader.Bool("enabled", &schedule->enabled),
        loader.DurationField("interval", &schedule->interval, kAtLeastOneSecond, interval),
        loader.DurationField("timeout", &schedule->timeout, kPositive, timeout),
    };
  }

 public:
  // The names Probe() below reads for `section`, without reading anything.
  static std::vector<std::string> KeysOf(const SectionSchema& section) {
    Loader loader("", {});
    ProbeSchedule schedule;
    std::shared_ptr<ProbeSection> settings = section.make_defaults();
    Fields fields = ScheduleFields(loader, &schedule, nullptr, nullptr);
    Schema own(loader, fields);
    section.declare(own, *settings);
    std::vector<std::string> keys;
    for (const Field& field : fields) keys.push_back(field.name);
    return keys;
  }

 private:
  // The schedule keys every probe shares, plus the probe's own fields.
  Field Probe(const SectionSchema& section, ProbeConfig* probe) {
    return {section.name, [this, &section, probe](const toml::node& node, const std::string& path) {
              const toml::table* table = node.as_table();
              if (table == nullptr) return WrongType(node, path, "a table");
              ProbeSchedule* schedule = &probe->schedule;
              std::shared_ptr<ProbeSection> settings = section.make_defaults();
              Seen interval;
              Seen timeout;
              Fields fields = ScheduleFields(*this, schedule, &interval, &timeout);
              Schema own(*this, fields);
              section.declare(own, *settings);
              ReadTable(*table, path, fields);
              probe->settings = std::move(settings);

              if (timeout.node == nullptr) {
                // An operator who shortens only the interval should not have
                // to restate the timeout: the default is capped at it.
                if (interval.valid) schedule->timeout = std::min(schedule->timeout, schedule->interval);
              } else if (timeout.valid && (interval.valid || interval.node == nullptr) &&
                         schedule->timeout > schedule->interval) {
                Invalid(*timeout.node, JoinPath(path, "timeout"),
                        FormatDuration(schedule->timeout) + " is longer than the interval (" +
                            FormatDuration(schedule->interval) + ")");
              }
            }};
  }

  static constexpr const char* kNulInString = "must not contain a NUL character (\\u0000)";

  Field String(std::string_view name, std::string* out) {
    return {std::string(name), [this, out](const toml::node& node, const std::string& path) {
              if (const auto* value = node.as_string()) {
                // TOML allows "\u0000"; a path would be cut short at it.
                if (value->get().find('\0') != std::string::npos) return Invalid(node, path, kNulInString);
                *out = value->get();
              } else {
                WrongType(node, path, "a string");
              }
            }};
  }

  Field Bool(std::string_view name, bool* out) {
    return {std::string(name), [this, out](const toml::node& node, const std::string& path) {
              if (const auto* value = node.as_boolean()) {
                *out = value->get();
              } else {
                WrongType(node, path, "a boolean (true or false)");
              }
            }};
  }

  Field Uint(std::string_view name, std::uint32_t* out, std::uint32_t low, std::uint32_t high) {
    return {std::string(name), [this, out, low, high](const toml::node& node, const std::string& path) {
              const auto* value = node.as_integer();
              if (value == nullptr) return WrongType(node, path, "an integer");
              const std::int64_t v = value->get();
              if (v < low || v > high) {
                return Invalid(
                    node, path,
                    std::to_string(v) + " is out of range [" + std::to_string(low) + ", " + std::to_string(high) + "]");
              }
              *out = static_cast<std::uint32_t>(v);
            }};
  }

  Field Number(std::string_view name, double* out, NumberRange range) {
    return {std::string(name), [this, out, range](const toml::node& node, const std::string& path) {
              double v = 0;
              if (const auto* f = node.as_floating_point()) {
                v = f->get();
              } else if (const auto* i = node.as_integer()) {
                v = static_cast<double>(i->get());
              } else {
                return WrongType(node, path, "a number");
              }
              // Written so that NaN fails too.
              const bool above_low = range.low_inclusive ? v >= range.low : v > range.low;
              if (!(above_low && v <= range.high)) {
                return Invalid(node, path, FormatNumber(v) + " is out of range " + std::string(range.text));
              }
              *out = v;
            }};
  }

  // Reads a string in the unit grammar, or an integer meaning the bare unit
  // (seconds, bytes), through the same parser so errors read alike.
  template <typename Parse>
  std::optional<std::uint64_t> ReadQuantity(const toml::node& node, const std::string& path, std::string_view expected,
                                            Parse parse) {
    std::string text;
    if (const auto* s = node.as_string()) {
      text = s->get();
    } else if (const auto* i = node.as_integer()) {
      text = std::to_string(i->get());
    } else {
      WrongType(node, path, expected);
      return std::nullopt;
    }
    auto parsed = parse(text);
    if (!parsed) {
      Invalid(node, path, parsed.error());
      return std::nullopt;
    }
    return *parsed;
  }

  bool CheckLowerBound(const toml::node& node, const std::string& path, std::uint64_t value, LowerBound bound,
                       const std::function<std::string(std::uint64_t)>& format) {
    if (bound.inclusive ? value >= bound.value : value > bound.value) return true;
    Invalid(node, path,
            format(value) + " is out of range (must be " + (bound.inclusive ? "at least " : "greater than ") +
                format(bound.value) + ")");
    return false;
  }

  std::optional<Duration> ReadDuration(const toml::node& node, const std::string& path, LowerBound bound) {
    const auto ns = ReadQuantity(node, path, "a duration string like \"5min\"", [](std::string_view text) {
      auto d = ParseDuration(text);
      return d ? Result<std::uint64_t>(static_cast<std::uint64_t>(d->count()))
               : Result<std::uint64_t>::Error(d.error());
    });
    const auto format = [](std::uint64_t v) { return FormatDuration(Duration(static_cast<Duration::rep>(v))); };
    if (!ns || !CheckLowerBound(node, path, *ns, bound, format)) return std::nullopt;
    return Duration(static_cast<Duration::rep>(*ns));
  }

  Field DurationField(std::string_view name, Duration* out, LowerBound bound, Seen* seen = nullptr) {
    return {std::string(name), [this, out, bound, seen](const toml::node& node, const std::string& path) {
              const auto d = ReadDuration(node, path, bound);
              if (d) *out = *d;
              if (seen != nullptr) *seen = {&node, d.has_value()};
            }};
  }

  Field Size(std::string_view name, std::uint64_t* out) {
    return {std::string(name), [this, out](const toml::node& node, const std::string& path) {
              const auto bytes = ReadQuantity(node, path, "a size string like \"64mb\"", ParseSize);
              if (bytes && CheckLowerBound(node, path, *bytes, kAtLeastOneByte, FormatSize)) *out = *bytes;
            }};
  }

  Field StringList(std::string_view name, std::vector<std::string>* out,
                   std::function<std::string(const std::string&)> check = nullptr) {
    return {std::string(name), [this, out, check = std::move(check)](const toml::node& node, const std::string& path) {
              const toml::array* array = node.as_array();
              if (array == nullptr) return WrongType(node, path, "an array of strings");
              std::vector<std::string> values;
              for (std::size_t i = 0; i < array->size(); ++i) {
                const toml::node& element = *array->get(i);
                const auto* value = element.as_string();
                if (value == nullptr) return WrongType(element, Indexed(path, i), "a string");
                if (value->get().empty()) return Invalid(element, Indexed(path, i), "must not be empty");
                if (value->get().find('\0') != std::string::npos) {
                  return Invalid(element, Indexed(path, i), kNulInString);
                }
                if (check) {
                  if (const std::string refused = check(value->get()); !refused.empty()) {
                    return Invalid(element, Indexed(path, i), refused);
                  }
                }
                values.push_back(value->get());
              }
              *out = std::move(values);
            }};
  }

  Field PortList(std::string_view name, std::vector<std::uint16_t>* out) {
    return {std::string(name), [this, out](const toml::node& node, const std::string& path) {
              const toml::array* array = node.as_array();
              if (array == nullptr) return WrongType(node, path, "an array of port numbers");
              if (array->empty()) return Invalid(node, path, "must list at least one port");
              std::vector<std::uint16_t> ports;
              for (std::size_t i = 0; i < array->size(); ++i) {
                const toml::node& element = *array->get(i);
                const auto* value = element.as_integer();
                if (value == nullptr) return WrongType(element, Indexed(path, i), "an integer");
                const std::int64_t port = value->get();
                if (port < 1 || port > 65535) {
                  return Invalid(element, Indexed(path, i), std::to_string(port) + " is out of range [1, 65535]");
                }
                if (std::find(ports.begin(), ports.end(), port) != ports.end()) {
                  return Invalid(element, Indexed(path, i), "duplicate port " + std::to_string(port));
                }
                ports.push_back(static_cast<std::uint16_t>(port));
              }
              *out = std::move(ports);
            }};
  }

  Field DurationTable(std::string_view name, std::map<std::string, Duration>* out, LowerBound bound,
                      std::string_view example) {
    return {std::string(name),
            [this, out, bound, example = std::string(example)](const toml::node& node, const std::string& path) {
              const toml::table* table = node.as_table();
              if (table == nullptr) return WrongType(node, path, "a table like " + example);
              // Keeps going after a bad entry: tables iterate in key order, and
              // the earliest one in the document should be the one reported.
              std::map<std::string, Duration> baselines;
              bool valid = true;
              for (auto&& [key, value] : *table) {
                if (key.str().empty()) {
                  Fail(key.source(), path + ": empty fingerprint");
                  valid = false;
                } else if (const auto d = ReadDuration(value, JoinPath(path, key.str()), bound)) {
                  baselines.emplace(key.str(), *d);
                } else {
                  valid = false;
                }
              }
              if (valid) *out = std::move(baselines);
            }};
  }

  Field TableArray(std::string_view name, std::function<void(Schema&)> declare_item, std::vector<std::string> required,
                   std::size_t max_items, std::string_view example) {
    return {std::string(name), [this, declare_item = std::move(declare_item), required = std::move(required), max_items,
                                example = std::string(example)](const toml::node& node, const std::string& path) {
              const toml::array* array = node.as_array();
              if (array == nullptr) return WrongType(node, path, "an array of tables like " + example);
              if (array->size() > max_items) {
                return Invalid(node, path,
                               std::to_string(array->size()) + " entries, at most " + std::to_string(max_items));
              }
              for (std::size_t i = 0; i < array->size(); ++i) {
                const toml::node& element = *array->get(i);
                const std::string item_path = Indexed(path, i);
                const toml::table* table = element.as_table();
                if (table == nullptr) {
                  WrongType(element, item_path, "a table like " + example);
                  continue;
                }
                Fields fields;
                Schema item(*this, fields);
                declare_item(item);
                ReadTable(*table, item_path, fields);
                for (const std::string& key : required) {
                  if (!table->contains(key)) Invalid(element, item_path, "missing key \"" + key + "\"");
                }
              }
            }};
  }

  Field NameTable(std::string_view name, std::map<std::string, std::string>* out, std::size_t max_length,
                  std::string_view example, std::function<std::string(const std::string&)> check) {
    return {std::string(name), [this, out, max_length, example = std::string(example), check = std::move(check)](
                                   const toml::node& node, const std::string& path) {
              const toml::table* table = node.as_table();
              if (table == nullptr) return WrongType(node, path, "a table like " + example);
              // Keeps going after a bad entry, as DurationTable does.
              std::map<std::string, std::string> names;
              bool valid = true;
              for (auto&& [key, value] : *table) {
                const std::string entry = JoinPath(path, key.str());
                const auto* text = value.as_string();
                std::string refused;
                if (key.str().empty()) {
                  Fail(key.source(), path + ": empty key");
                } else if (check && !(refused = check(std::string(key.str()))).empty()) {
                  Fail(key.source(), entry + ": " + refused);
                } else if (text == nullptr) {
                  WrongType(value, entry, "a name string like " + example);
                } else if (!ValidName(text->get(), max_length)) {
                  Invalid(value, entry,
                          "\"" + text->get() + "\" is not a name of 1 to " + std::to_string(max_length) +
                              " characters a-z, 0-9 and _");
                } else {
                  names.emplace(key.str(), text->get());
                  continue;
                }
                valid = false;
              }
              if (valid) *out = std::move(names);
            }};
  }

  static bool ValidName(std::string_view name, std::size_t max_length) {
    return !name.empty() && name.size() <= max_length && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
  }

  std::string source_;
  std::span<const SectionSchema> sections_;
  std::vector<Issue> issues_;
};

}  // namespace detail

namespace {

std::optional<std::string> SystemGetenv(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

bool WritableOrCreatable(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return false;
  return ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

std::vector<std::string> SectionKeys(const SectionSchema& section) { return detail::Loader::KeysOf(section); }

Config Defaults(std::span<const SectionSchema> sections) {
  Config config;
  for (const SectionSchema& section : sections) {
    config.probes[section.name] = ProbeConfig{section.schedule, section.make_defaults()};
  }
  return config;
}

const ProbeConfig& Config::Section(std::string_view name) const {
  const auto it = probes.find(name);
  if (it == probes.end() || it->second.settings == nullptr) {
    throw std::logic_error("config has no [probes." + std::string(name) + "] section");
  }
  return it->second;
}

ProbeConfig& Config::Section(std::string_view name) {
  return const_cast<ProbeConfig&>(std::as_const(*this).Section(name));
}

void Schema::String(std::string_view key, std::string* out) { fields_.push_back(loader_.String(key, out)); }
void Schema::Bool(std::string_view key, bool* out) { fields_.push_back(loader_.Bool(key, out)); }
void Schema::Uint(std::string_view key, std::uint32_t* out, std::uint32_t low, std::uint32_t high) {
  fields_.push_back(loader_.Uint(key, out, low, high));
}
void Schema::Number(std::string_view key, double* out, NumberRange range) {
  fields_.push_back(loader_.Number(key, out, range));
}
void Schema::Duration(std::string_view key, config::Duration* out, LowerBound bound) {
  fields_.push_back(loader_.DurationField(key, out, bound));
}
void Schema::Size(std::string_view key, std::uint64_t* out) { fields_.push_back(loader_.Size(key, out)); }
void Schema::StringList(std::string_view key, std::vector<std::string>* out,
                        std::function<std::string(const std::string& value)> check) {
  fields_.push_back(loader_.StringList(key, out, std::move(check)));
}
void Schema::PortList(std::string_view key, std::vector<std::uint16_t>* out) {
  fields_.push_back(loader_.PortList(key, out));
}
void Schema::DurationTable(std::string_view key, std::map<std::string, config::Duration>* out, LowerBound bound,
                           std::string_view example) {
  fields_.push_back(loader_.DurationTable(key, out, bound, example));
}
void Schema::TableArray(std::string_view key, std::function<void(Schema& item)> declare_item,
                        std::vector<std::string> required, std::size_t max_items, std::string_view example) {
  fields_.push_back(loader_.TableArray(key, std::move(declare_item), std::move(required), max_items, example));
}
void Schema::NameTable(std::string_view key, std::map<std::string, std::string>* out, std::size_t max_length,
                       std::string_view example, std::function<std::string(const std::string& key)> check) {
  fields_.push_back(loader_.NameTable(key, out, max_length, example, std::move(check)));
}

Result<Config> LoadString(std::string_view text, std::string_view source, std::span<const SectionSchema> sections) {
  try {
    const toml::table root = toml::parse(text, std::string_view(source));
    Config config = Defaults(sections);
    config.source = std::string(source);
    detail::Loader loader(source, sections);
    loader.ReadRoot(root, &config);
    if (auto error = loader.FirstError()) return Result<Config>::Error("bad_config", std::move(*error));
    return config;
  } catch (const toml::parse_error& e) {
    const toml::source_position where = e.source().begin;
    return Result<Config>::Error("bad_config", std::string(source) + ":" + std::to_string(where.line) + ":" +
                                                   std::to_string(where.column) + ": " + std::string(e.description()));
  } catch (const std::exception& e) {
    // Only resource exhaustion is expected here; never let it cross the boundary.
    return Result<Config>::Error("bad_config", std::string(source) + ": " + e.what());
  }
}

Result<Config> LoadFile(const std::filesystem::path& path, std::span<const SectionSchema> sections) {
  // A regular file of at most kMaxConfigFileBytes: never a FIFO, a device
  // (/dev/zero) or a directory, so reading cannot block or grow for ever.
  auto text = ReadBoundedFile(path, "", kMaxConfigFileBytes);
  if (!text) return Result<Config>::Error("bad_config", text.error());
  return LoadString(*text, path.string(), sections);
}

std::filesystem::path ResolveStateDirectory(const Config& config,
                                            const std::function<std::optional<std::string>(const char*)>& getenv,
                                            const std::function<bool(const std::filesystem::path&)>& writable) {
  if (!config.state_directory.empty()) return config.state_directory;

  // systemd passes one path per StateDirectory= entry, colon-separated.
  const std::optional<std::string> env = getenv ? getenv("STATE_DIRECTORY") : SystemGetenv("STATE_DIRECTORY");
  if (env) {
    const std::string first = env->substr(0, env->find(':'));
    if (!first.empty()) return first;
  }

  const std::filesystem::path system_dir = "/var/lib/hostperf";
  if (writable ? writable(system_dir) : WritableOrCreatable(system_dir)) return system_dir;

  std::error_code ec;
  std::filesystem::path local = std::filesystem::absolute("hostperf-state", ec);
  return ec ? std::filesystem::path("hostperf-state") : local;
}

}  // namespace hostperf::config
