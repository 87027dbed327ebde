#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "hostperf/base/clock.h"
#include "hostperf/base/result.h"
#include "hostperf/config/config.h"
#include "hostperf/runs/full_run.h"
#include "hostperf/runs/run_manager.h"

namespace prometheus {
class Collectable;
}

namespace hostperf::runs {

// Full runs on a calendar ([full_runs]): maintenance windows start at
// window_anchor + k * every (UTC, no daylight saving), and each host starts its
// run at a stable per-host splay into the window, so that a fleet spreads out
// and a host keeps its slot from one period to the next.

// A stable hash of `host` mapped into [0, window): the same on every build and
// machine (FNV-1a, then a 64-bit finaliser so that similar names spread).
std::chrono::nanoseconds HostSplay(std::string_view host, std::chrono::nanoseconds window);

struct CalendarSlot {
  std::int64_t start_ns = 0;         // the run's start, Unix nanoseconds
  std::int64_t window_start_ns = 0;  // its maintenance window
  std::int64_t window_end_ns = 0;
  double UnixSeconds() const { return static_cast<double>(start_ns) / 1e9; }
};
// The host's first slot strictly after `after_ns` (Unix nanoseconds).
CalendarSlot NextSlot(const config::FullRunsConfig& calendar, std::chrono::nanoseconds splay, std::int64_t after_ns);

// The run API body of [full_runs] ({"probes", "duration", "options"}),
// validated by the run API's own parser (so each probe's module parses its
// options). Errors read "full_runs.<key>: ...".
Result<nlohmann::json> CalendarRunBody(const config::FullRunsConfig& calendar);

// The host identity hashed into the splay: full_runs.host, else the hostname.
std::string CalendarHost(const config::FullRunsConfig& calendar);

// Submits [full_runs]' run through `submit` (the run manager's Submit, as the
// run API does) when the host's slot comes. Tick() is cheap and is called
// often (the daemon's heartbeat, at most a second apart); the clock is
// injected so tests drive the calendar without waiting.
//
// A slot that passed while the daemon was not running is not run late: after
// a restart the next slot is planned from now. A maintenance window is the
// time the operators agreed to lose performance in; a run that starts late
// could fall into production hours. A Tick that comes after its slot but
// still inside the window (or within a minute of the slot, for a slot near
// the window's end) runs it; later it is skipped ("missed").
class FullRunCalendar {
 public:
  using Submit = std::function<RunManager::Submission(const nlohmann::json& body)>;
  // `host` overrides CalendarHost() (tests); empty: CalendarHost(config).
  FullRunCalendar(const Clock& clock, Submit submit, std::string host = {});
  ~FullRunCalendar();
  FullRunCalendar(const FullRunCalendar&) = delete;
  FullRunCalendar& operator=(const FullRunCalendar&) = delete;

  // Installs a (validated) config's [full_runs] and plans the next slot from
  // now. An invalid body disables the calendar (logged).
  void Apply(const config::Config& config);
  // Submits the run if its slot has come, and plans the next one.
  void Tick();
  // Unix seconds of the next slot; nullopt while disabled.
  std::optional<double> NextUnixSeconds() const;

  // hostperf_full_run_next_timestamp_seconds (absent while disabled) and
  // hostperf_full_run_calendar_skipped_total{reason} (see docs/metrics.md).
  // The collectable refers to this calendar: drop it first.
  std::shared_ptr<prometheus::Collectable> Metrics();

  // The skip reasons, each counted from 0.
  static constexpr const char* kSkipReasons[] = {"full_run_active", "missed", "rejected"};

 private:
  class Collector;
  std::int64_t NowNs() const;

  const Clock& clock_;
  Submit submit_;
  std::string host_override_;

  mutable std::mutex mu_;
  std::optional<config::FullRunsConfig> calendar_;  // none: disabled
  nlohmann::json body_;
  std::string host_;
  std::chrono::nanoseconds splay_{0};
  CalendarSlot next_;
  std::map<std::string, double> skipped_;
};

}  // namespace hostperf::runs
