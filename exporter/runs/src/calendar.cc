#include "hostperf/runs/calendar.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>
#include <vector>

#include "hostperf/base/files.h"

namespace hostperf::runs {
namespace {

using nlohmann::json;

// Ticks come about a second apart, later on a loaded host: a slot near the
// end of its window still runs when its tick is this late.
constexpr std::chrono::nanoseconds kLateGrace = std::chrono::minutes(1);

// Floor division: windows before the anchor still land on the grid.
std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

std::string Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::chrono::nanoseconds HostSplay(std::string_view host, std::chrono::nanoseconds window) {
  if (window.count() <= 0) return std::chrono::nanoseconds(0);
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a
  for (const char c : host) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  // splitmix64's finaliser: "db-01" and "db-02" must not land side by side.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(h % static_cast<std::uint64_t>(window.count())));
}

CalendarSlot NextSlot(const config::FullRunsConfig& calendar, std::chrono::nanoseconds splay, std::int64_t after_ns) {
  const std::int64_t every = calendar.every.count();
  const std::int64_t anchor = calendar.window_anchor.count();
  // The window after the last one whose slot is at or before `after_ns`.
  const std::int64_t window = anchor + (FloorDiv(after_ns - anchor - splay.count(), every) + 1) * every;
  return {window + splay.count(), window, window + calendar.window.count()};
}

Result<json> CalendarRunBody(const config::FullRunsConfig& calendar) {
  json body = {{"probes", calendar.probes}};
  if (!calendar.duration.empty()) body["duration"] = calendar.duration;
  if (!calendar.options_json.empty()) {
    json options = json::object();
    for (const auto& [probe, text] : calendar.options_json) {
      if (const std::string deep = JsonDepthError(text); !deep.empty()) {
        return Result<json>::Error("bad_config", "full_runs.options." + probe + ": " + deep);
      }
      json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) return Result<json>::Error("bad_config", "full_runs.options." + probe + ": not JSON");
      options[probe] = std::move(parsed);
    }
    body["options"] = std::move(options);
  }
  if (auto request = ParseFullRunRequest(body); !request) {
    return Result<json>::Error("bad_config", "full_runs." + request.error());
  }
  return body;
}

std::string CalendarHost(const config::FullRunsConfig& calendar) {
  return calendar.host.empty() ? Hostname() : calendar.host;
}

class FullRunCalendar::Collector final : public prometheus::Collectable {
 public:
  explicit Collector(const FullRunCalendar& calendar) : calendar_(calendar) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::optional<double> next;
    std::map<std::string, double> skipped;
    {
      std::lock_guard lock(calendar_.mu_);
      if (calendar_.calendar_) next = calendar_.next_.UnixSeconds();
      skipped = calendar_.skipped_;
    }
    std::vector<prometheus::MetricFamily> families;
    if (next) {
      prometheus::ClientMetric metric;
      metric.gauge.value = *next;
      families.push_back({"hostperf_full_run_next_timestamp_seconds",
                          "Unix time of this host's next calendar full run ([full_runs]).",
                          prometheus::MetricType::Gauge,
                          {metric}});
    }
    prometheus::MetricFamily total{"hostperf_full_run_calendar_skipped_total",
                                   "Calendar full runs that did not start, by reason.",
                                   prometheus::MetricType::Counter,
                                   {}};
    for (const char* reason : kSkipReasons) {
      prometheus::ClientMetric metric;
      metric.label = {{"reason", reason}};
      metric.counter.value = skipped[reason];
      total.metric.push_back(std::move(metric));
    }
    families.push_back(std::move(total));
    return families;
  }

 private:
  const FullRunCalendar& calendar_;
};

FullRunCalendar::FullRunCalendar(const Clock& clock, Submit submit, std::string host)
    : clock_(clock), submit_(std::move(submit)), host_override_(std::move(host)) {
  for (const char* reason : kSkipReasons) skipped_[reason] = 0;
}

FullRunCalendar::~FullRunCalendar() = default;

std::int64_t FullRunCalendar::NowNs() const { return std::llround(clock_.UnixSeconds() * 1e9); }

void FullRunCalendar::Apply(const config::Config& config) {
  const config::FullRunsConfig& calendar = config.full_runs;
  std::lock_guard lock(mu_);
  if (!calendar.enabled) {
    if (calendar_) spdlog::info("full-run calendar disabled");
    calendar_.reset();
    return;
  }
  auto body = CalendarRunBody(calendar);
  if (!body) {
    // The daemon validates at load; reaching this is a programming error.
    spdlog::error("full-run calendar disabled: {}", body.error());
    calendar_.reset();
    return;
  }
  calendar_ = calendar;
  body_ = std::move(body).value();
  host_ = host_override_.empty() ? CalendarHost(calendar) : host_override_;
  splay_ = HostSplay(host_, calendar.window);
  next_ = NextSlot(calendar, splay_, NowNs());
  spdlog::info("full-run calendar: {} every {} from {} UTC, window {}; host {} starts {:.0f}s into it; next {}",
               body_["probes"].dump(), config::FormatDuration(calendar.every), calendar.window_start,
               config::FormatDuration(calendar.window), host_, std::chrono::duration<double>(splay_).count(),
               FormatUtc(next_.UnixSeconds(), "%a %Y-%m-%d %H:%M:%S UTC"));
}

void FullRunCalendar::Tick() {
  json body;
  CalendarSlot slot;
  {
    std::lock_guard lock(mu_);
    if (!calendar_) return;
    const std::int64_t now = NowNs();
    if (now < next_.start_ns) return;
    slot = next_;
    next_ = NextSlot(*calendar_, splay_, now);
    if (now > std::max(slot.window_end_ns, slot.start_ns + kLateGrace.count())) {
      // The process was stopped or the clock jumped: do not start outside the window.
      skipped_["missed"] += 1;
      spdlog::warn("full-run calendar: the slot at {} passed with its window; next {}",
                   FormatUtc(slot.UnixSeconds(), "%Y-%m-%d %H:%M:%S UTC"),
                   FormatUtc(next_.UnixSeconds(), "%Y-%m-%d %H:%M:%S UTC"));
      return;
    }
    body = body_;
  }
  const RunManager::Submission submission = submit_(body);
  const std::string next = FormatUtc(NextUnixSeconds().value_or(0), "%Y-%m-%d %H:%M:%S UTC");
  using Status = RunManager::Submission::Status;
  std::lock_guard lock(mu_);
  switch (submission.status) {
    case Status::kAccepted:
      spdlog::info("full-run calendar: submitted full run {}; next {}", submission.id, next);
      return;
    case Status::kConflict:
      skipped_["full_run_active"] += 1;
      spdlog::warn("full-run calendar: skipped this slot ({}); next {}", submission.error, next);
      return;
    case Status::kInvalid:
      break;
  }
  skipped_["rejected"] += 1;
  spdlog::error("full-run calendar: the run manager rejected the run: {}; next {}", submission.error, next);
}

std::optional<double> FullRunCalendar::NextUnixSeconds() const {
  std::lock_guard lock(mu_);
  if (!calendar_) return std::nullopt;
  return next_.UnixSeconds();
}

std::shared_ptr<prometheus::Collectable> FullRunCalendar::Metrics() { return std::make_shared<Collector>(*this); }

}  // namespace hostperf::runs
