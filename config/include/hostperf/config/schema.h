#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/config/units.h"

namespace hostperf::config {

namespace detail {
class Loader;
struct Field;
}  // namespace detail

// Lower bound on a duration or size; `inclusive` false means "greater than".
struct LowerBound {
  std::uint64_t value;
  bool inclusive;
};
inline constexpr LowerBound kAnyDuration{0, true};
inline constexpr LowerBound kPositive{0, false};

struct NumberRange {
  double low;
  double high;
  bool low_inclusive;
  std::string_view text;  // as shown in messages, e.g. "[0, 0.5]"
};

// The keys of one TOML table and where their values go. A module declares its
// section's keys on it; the loader reads them with file:line:column errors
// ("probes.net.ports[1]: duplicate port 14159"). Keys not declared are
// "unknown key" errors. Values are written only when valid.
class Schema {
 public:
  void String(std::string_view key, std::string* out);
  void Bool(std::string_view key, bool* out);
  void Uint(std::string_view key, std::uint32_t* out, std::uint32_t low, std::uint32_t high);
  void Number(std::string_view key, double* out, NumberRange range);
  // A duration string in units.h's grammar, or an integer of seconds.
  void Duration(std::string_view key, config::Duration* out, LowerBound bound);
  // A size string in units.h's grammar, or an integer of bytes; at least 1.
  void Size(std::string_view key, std::uint64_t* out);
  // Non-empty strings; `check`, when set, refuses an element by returning why (else "").
  void StringList(std::string_view key, std::vector<std::string>* out,
                  std::function<std::string(const std::string& value)> check = nullptr);
  // Port numbers 1..65535, at least one, no duplicates.
  void PortList(std::string_view key, std::vector<std::uint16_t>* out);
  // A table of non-empty names to durations above `bound`, e.g.
  // { "0123abcd0123abcd" = "48ms" }; `example` shows the shape in errors.
  void DurationTable(std::string_view key, std::map<std::string, config::Duration>* out, LowerBound bound,
                     std::string_view example);
  // A table of non-empty keys to names ([a-z0-9_]+, at most `max_length`
  // characters), e.g. { "/data" = "data" }; `example` shows the shape in
  // errors. `check`, when set, refuses a key by returning why (else "").
  void NameTable(std::string_view key, std::map<std::string, std::string>* out, std::size_t max_length,
                 std::string_view example, std::function<std::string(const std::string& key)> check = nullptr);
  // An array of tables ([[section.key]] or [{...}, ...]), at most `max_items`:
  // for each item, `declare_item` adds a fresh item to the caller's list and
  // declares that item's keys on the Schema it is given. Keys in `required`
  // must be present in every item; `example` shows the shape in errors.
  void TableArray(std::string_view key, std::function<void(Schema& item)> declare_item,
                  std::vector<std::string> required, std::size_t max_items, std::string_view example);
  // TableArray into a std::vector<T>, keys declared by `declare(schema, item)`.
  template <typename T>
  void TableArray(std::string_view key, std::vector<T>* out, void (*declare)(Schema&, T&),
                  std::vector<std::string> required, std::size_t max_items, std::string_view example) {
    out->clear();  // the file's list replaces the default one
    TableArray(
        key, [out, declare](Schema& item) { declare(item, out->emplace_back()); }, std::move(required), max_items,
        example);
  }

 private:
  friend class detail::Loader;
  Schema(detail::Loader& loader, std::vector<detail::Field>& fields) : loader_(loader), fields_(fields) {}
  detail::Loader& loader_;
  std::vector<detail::Field>& fields_;
};

// A probe's own settings under [probes.<name>]: a module derives its typed
// struct from this (with its defaults as member initialisers).
struct ProbeSection {
  virtual ~ProbeSection() = default;
};

// The keys every probe section shares.
struct ProbeSchedule {
  bool enabled = true;
  Duration interval{};
  Duration timeout{};
};

// How [probes.<name>] is read: the module's default schedule, its typed
// settings with their defaults, and its own keys.
struct SectionSchema {
  std::string name;
  ProbeSchedule schedule;
  std::function<std::shared_ptr<ProbeSection>()> make_defaults;
  std::function<void(Schema&, ProbeSection&)> declare;
};

// A SectionSchema for a settings struct S (derived from ProbeSection) whose
// keys `declare` names.
template <typename S>
SectionSchema DescribeSection(std::string name, ProbeSchedule schedule, void (*declare)(Schema&, S&)) {
  return {std::move(name), schedule, [] { return std::make_shared<S>(); },
          [declare](Schema& schema, ProbeSection& section) { declare(schema, static_cast<S&>(section)); }};
}

}  // namespace hostperf::config
