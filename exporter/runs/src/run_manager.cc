#include "hostperf/runs/run_manager.h"

#include <fmt/format.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <exception>
#include <utility>

#include "hostperf/base/files.h"
#include "hostperf/probes/probe.h"
#include "hostperf/probes/state_file.h"
#include "hostperf/runs/full_run.h"

namespace hostperf::runs {
namespace {

using nlohmann::json;
using Status = probes::ProbeOutcome::Status;

constexpr int kHistoryVersion = 1;
constexpr const char* kFinalStates[] = {"succeeded", "failed", "cancelled"};

bool IsFinal(std::string_view state) {
  return std::find(std::begin(kFinalStates), std::end(kFinalStates), state) != std::end(kFinalStates);
}

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// "20261202-113501" (UTC).
std::string IdTimestamp(double unix_seconds) { return FormatUtc(unix_seconds, "%Y%m%d-%H%M%S"); }

// The N of "r-YYYYMMDD-HHMMSS-N", 0 when the id has another shape.
unsigned long IdSequence(std::string_view id) {
  const auto dash = id.rfind('-');
  if (dash == std::string_view::npos) return 0;
  unsigned long n = 0;
  for (const char c : id.substr(dash + 1)) {
    if (c < '0' || c > '9' || n > 100000000UL) return 0;
    n = n * 10 + static_cast<unsigned long>(c - '0');
  }
  return n;
}

// `text` with control characters (and DEL) escaped as \xNN and cut to
// kMaxStoredTextBytes on a UTF-8 boundary, saying how long it was.
std::string StoredText(std::string_view text) {
  std::string out;
  std::size_t consumed = 0;
  for (; consumed < text.size(); ++consumed) {
    const auto byte = static_cast<unsigned char>(text[consumed]);
    const bool control = byte < 0x20 || byte == 0x7f;
    if (out.size() + (control ? 4 : 1) > kMaxStoredTextBytes) break;  // whole escapes only
    if (control) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += text[consumed];
    }
  }
  if (consumed == text.size()) return out;
  while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xc0) == 0x80) out.pop_back();  // continuation bytes
  if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xc0) out.pop_back();              // a cut lead byte
  return out + fmt::format("... ({} bytes)", text.size());
}

// A probe's result as stored: whole up to kMaxStoredResultBytes of JSON.
json StoredResult(const json& result) {
  const std::size_t bytes = result.dump().size();
  if (bytes <= kMaxStoredResultBytes) return result;
  return {{"truncated", true}, {"bytes", bytes}};
}

// Readers that tolerate a hand-edited history file.
double NumberOr(const json& object, const char* key, double fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string StringOr(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Helpers for the collector's families.
prometheus::ClientMetric::Label Label(std::string name, std::string value) {
  return {std::move(name), std::move(value)};
}

prometheus::ClientMetric Gauge(double value, std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.gauge.value = value;
  return metric;
}

// hostperf_full_runs_total, one series per final state.
prometheus::MetricFamily FinishedRunsFamily(std::map<std::string, double>& counts) {
  prometheus::MetricFamily total{"hostperf_full_runs_total",
                                 "Full runs finished since the daemon started, by final state.",
                                 prometheus::MetricType::Counter,
                                 {}};
  for (const char* state : kFinalStates) {
    prometheus::ClientMetric metric;
    metric.label = {Label("state", state)};
    metric.counter.value = counts[state];
    total.metric.push_back(std::move(metric));
  }
  return total;
}

prometheus::MetricFamily HistoryErrorsFamily(std::map<std::string, double>& history_errors) {
  prometheus::MetricFamily history_error_total{
      "hostperf_full_run_history_errors_total",
      "Run history errors since the daemon started: unloadable (found at start-up and moved aside, or left "
      "untouched when it could not be moved), write (a history not written).",
      prometheus::MetricType::Counter,
      {}};
  for (const char* error : {"unloadable", "write"}) {
    prometheus::ClientMetric metric;
    metric.label = {Label("error", error)};
    metric.counter.value = history_errors[error];
    history_error_total.metric.push_back(std::move(metric));
  }
  return history_error_total;
}

// The last finish time, success, duration and headline figures of each
// probe, from its newest run in `runs` (oldest first); in that order.
std::array<prometheus::MetricFamily, 4> LastRunFamilies(const std::vector<json>& runs) {
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  MetricFamily timestamp{"hostperf_full_run_last_timestamp_seconds",
                         "Unix time the probe's last full run finished.",
                         MetricType::Gauge,
                         {}};
  MetricFamily success{
      "hostperf_full_run_success", "1 if the probe's last full run succeeded, else 0.", MetricType::Gauge, {}};
  MetricFamily duration{
      "hostperf_full_run_duration_seconds", "Wall-clock time of the probe's last full run.", MetricType::Gauge, {}};
  MetricFamily figure{"hostperf_full_run_figure",
                      "Headline figures of the probe's last full run, base units (see docs/metrics.md).",
                      MetricType::Gauge,
                      {}};
  std::map<std::string, bool> seen;
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    const json outcomes = run->value("outcomes", json::object());
    if (!outcomes.is_object()) continue;
    for (const auto& [probe, outcome] : outcomes.items()) {
      if (seen[probe] || !outcome.is_object()) continue;
      seen[probe] = true;
      const auto probe_label = Label("probe", probe);
      timestamp.metric.push_back(Gauge(NumberOr(outcome, "finished_unix_seconds", 0), {probe_label}));
      success.metric.push_back(Gauge(StringOr(outcome, "status") == "success" ? 1 : 0, {probe_label}));
      duration.metric.push_back(Gauge(NumberOr(outcome, "duration_seconds", 0), {probe_label}));
      const json results = run->value("results", json::object());
      const json result = results.is_object() ? results.value(probe, json::object()) : json::object();
      for (const probes::Figure& f : probes::HeadlineFigures(probe, result)) {
        figure.metric.push_back(Gauge(f.value, {Label("figure", f.name), probe_label, Label("subject", f.subject)}));
      }
    }
  }
  return {std::move(timestamp), std::move(success), std::move(duration), std::move(figure)};
}

}  // namespace

// hostperf_full_run_*: built from the run history at scrape time, so that the
// last full run of each probe is served again after a restart.
class RunManager::Collector final : public prometheus::Collectable {
 public:
  explicit Collector(const RunManager& manager) : manager_(manager) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<json> runs;
    std::map<std::string, double> counts;
    std::map<std::string, double> history_errors;
    std::size_t loaded = 0;
    bool active = false;
    {
      std::lock_guard lock(manager_.mu_);
      runs = manager_.runs_;
      counts = manager_.finished_counts_;
      history_errors = manager_.history_errors_;
      loaded = manager_.history_loaded_runs_;
      active = manager_.active_.has_value();
    }
    using prometheus::MetricFamily;
    MetricFamily active_family{"hostperf_full_run_active",
                               "1 while a full run is queued or running, else 0.",
                               prometheus::MetricType::Gauge,
                               {Gauge(active ? 1 : 0, {})}};
    MetricFamily history_loaded{"hostperf_full_run_history_loaded_runs",
                                "Full runs loaded from the run history at start-up.",
                                prometheus::MetricType::Gauge,
                                {Gauge(static_cast<double>(loaded), {})}};
    std::vector<MetricFamily> families;
    families.push_back(std::move(active_family));
    families.push_back(FinishedRunsFamily(counts));
    families.push_back(std::move(history_loaded));
    families.push_back(HistoryErrorsFamily(history_errors));
    // The per-probe families only once some probe has a last run.
    for (MetricFamily& family : LastRunFamilies(runs)) {
      if (!family.metric.empty()) families.push_back(std::move(family));
    }
    return families;
  }

 private:
  const RunManager& manager_;
};

RunManager::RunManager(std::vector<probes::Probe*> probes, const Clock& clock, RunManagerHooks hooks,
                       RunManagerOptions options)
    : probes_(std::move(probes)), clock_(clock), hooks_(std::move(hooks)), options_(std::move(options)) {
  {
    std::lock_guard lock(mu_);
    LoadHistory();
  }
  Flush();
  worker_ = std::thread([this] { Worker(); });
}

RunManager::~RunManager() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    if (active_) cancel_.store(true);
    cv_.notify_all();
  }
  worker_.join();
  {
    std::lock_guard lock(mu_);
    // A run the worker never picked up.
    if (active_) {
      if (json* run = FindLocked(*active_)) FinishLocked(*run, "failed", "interrupted");
    }
  }
  Flush();
}

bool RunManager::IsValidId(std::string_view id) {
  if (id.size() < 3 || id.size() > 64 || id.substr(0, 2) != "r-") return false;
  return std::all_of(id.begin() + 2, id.end(), [](char c) { return (c >= '0' && c <= '9') || c == '-'; });
}

json* RunManager::FindLocked(std::string_view id) {
  for (json& run : runs_) {
    if (run.value("id", "") == id) return &run;
  }
  return nullptr;
}

const json* RunManager::FindLocked(std::string_view id) const {
  for (const json& run : runs_) {
    if (run.value("id", "") == id) return &run;
  }
  return nullptr;
}

probes::Probe* RunManager::FindProbe(std::string_view name) const {
  for (probes::Probe* probe : probes_) {
    if (probe->Name() == name) return probe;
  }
  return nullptr;
}

std::string RunManager::NewIdLocked() {
  return "r-" + IdTimestamp(clock_.UnixSeconds()) + "-" + std::to_string(++sequence_);
}

void RunManager::LoadHistory() {
  if (options_.history_file.empty()) return;
  probes::RemoveStaleTemporaries(options_.history_file);  // a crash mid-write
  std::error_code exists_error;
  if (!std::filesystem::exists(options_.history_file, exists_error) && !exists_error) {
    spdlog::info("no run history at {} yet", options_.history_file.string());
    return;  // first start
  }
  const auto text = ReadBoundedFile(options_.history_file, "run history", options_.history_max_bytes);
  if (!text) return SetHistoryAside(text.error());
  // A file nested too deep is refused before it is built (as corrupt).
  const json parsed = JsonDepthError(*text, kMaxStoredJsonDepth).empty()
                          ? json::parse(*text, nullptr, /*allow_exceptions=*/false)
                          : json(json::value_t::discarded);
  if (!parsed.is_object() || !parsed.contains("runs") || !parsed["runs"].is_array()) {
    return SetHistoryAside("not a run history (JSON {\"runs\": [...]})");
  }
  bool changed = false;
  for (const json& run : parsed["runs"]) {
    if (!run.is_object() || !run.contains("id") || !run["id"].is_string() || !IsValidId(run["id"].get<std::string>()) ||
        !run.contains("state") || !run["state"].is_string()) {
      changed = true;  // drop what we cannot serve
      continue;
    }
    runs_.push_back(run);
    sequence_ = std::max(sequence_, IdSequence(run["id"].get<std::string>()));
    const std::string state = run["state"].get<std::string>();
    if (!IsFinal(state)) {
      // Queued or running when the last process ended.
      json& last = runs_.back();
      last["state"] = "failed";
      last["reason"] = "interrupted";
      last["finished_unix_seconds"] = clock_.UnixSeconds();
      changed = true;
      spdlog::warn("full run {} was {} when hostperf_exporter stopped; marked failed (interrupted)",
                   last["id"].get<std::string>(), state);
    }
  }
  TrimLocked();
  history_loaded_runs_ = runs_.size();
  spdlog::info("loaded {} full runs from the run history {}", runs_.size(), options_.history_file.string());
  if (changed) PersistLocked();
}

void RunManager::SetHistoryAside(std::string_view why) {
  history_errors_["unloadable"] += 1;
  const std::string base =
      options_.history_file.string() + ".unloadable-" + std::to_string(static_cast<long long>(clock_.UnixSeconds()));
  std::filesystem::path aside = base;
  std::error_code ec;
  for (int n = 1; std::filesystem::exists(aside, ec) && n < 1000; ++n) aside = base + "-" + std::to_string(n);
  std::filesystem::rename(options_.history_file, aside, ec);
  if (ec) {
    history_read_only_ = true;
    spdlog::error(
        "cannot load the run history {} ({}) nor move it aside ({}): it is left as it is and not "
        "written; runs are kept in memory only until the file is moved away",
        options_.history_file.string(), why, ec.message());
    return;
  }
  spdlog::error("cannot load the run history {} ({}): moved it to {} and starting a new one (0 runs loaded)",
                options_.history_file.string(), why, aside.string());
}

void RunManager::PersistLocked() {
  if (options_.history_file.empty() || history_read_only_) return;
  // The document is {"version": N, "runs": [...]}, spliced from each run's
  // text: final runs reuse the text printed when they ended.
  std::map<std::string, std::string> kept;
  std::string text = "{\"runs\":[";
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    const json& run = runs_[i];
    if (i > 0) text += ',';
    if (!IsFinal(run.value("state", ""))) {
      text += run.dump();
      continue;
    }
    const std::string id = run.value("id", "");
    auto cached = final_text_.find(id);
    std::string printed = cached != final_text_.end() ? std::move(cached->second) : run.dump();
    text += printed;
    kept.emplace(id, std::move(printed));
  }
  final_text_ = std::move(kept);  // trimmed runs drop out here
  text += "],\"version\":" + std::to_string(kHistoryVersion) + "}\n";
  if (text.size() > options_.history_max_bytes) {
    // The oldest run that still has results gives them up; its record stays.
    for (json& run : runs_) {
      const auto results = run.find("results");
      if (results == run.end() || !results->is_object() || results->empty()) continue;
      spdlog::warn("run history would be {} bytes, over its {} byte cap: dropping the results of run {}", text.size(),
                   options_.history_max_bytes, run.value("id", ""));
      *results = json::object();
      run["results_dropped"] = true;
      final_text_.erase(run.value("id", ""));
      return PersistLocked();
    }
    spdlog::error("run history would be {} bytes, over its {} byte cap, with no results left to drop: not written",
                  text.size(), options_.history_max_bytes);
    history_errors_["write"] += 1;
    return;
  }
  pending_history_ = std::move(text);
}

void RunManager::Flush() {
  // Writes are serialised and each takes the newest snapshot, so an older
  // snapshot never overwrites a newer one; mu_ is not held while writing.
  std::lock_guard write_lock(write_mu_);
  std::optional<std::string> text;
  {
    std::lock_guard lock(mu_);
    text.swap(pending_history_);
  }
  if (!text) return;
  if (const auto error = probes::WriteFileAtomically(options_.history_file, *text)) {
    spdlog::error("cannot write run history {}: {}", options_.history_file.string(), error.message());
    std::lock_guard lock(mu_);
    history_errors_["write"] += 1;
  }
}

void RunManager::TrimLocked() {
  std::size_t finished = 0;
  for (const json& run : runs_) finished += IsFinal(run.value("state", "")) ? 1 : 0;
  for (auto it = runs_.begin(); it != runs_.end() && finished > options_.history_limit;) {
    if (IsFinal(it->value("state", ""))) {
      it = runs_.erase(it);
      --finished;
    } else {
      ++it;
    }
  }
}

void RunManager::FinishLocked(json& run, std::string_view state, std::string reason) {
  run["state"] = state;
  if (!reason.empty()) run["reason"] = std::move(reason);
  run["finished_unix_seconds"] = clock_.UnixSeconds();
  finished_counts_[std::string(state)] += 1;
  const std::string id = run.value("id", "");
  spdlog::info("full run {} {}{}", id, state,
               run.contains("reason") ? " (" + run["reason"].get<std::string>() + ")" : "");
  if (active_ && *active_ == id) active_.reset();
  TrimLocked();  // `run` may be gone from here on
  PersistLocked();
  cv_.notify_all();
}

RunManager::Submission RunManager::Submit(const json& body, std::string_view trigger) {
  Submission submission = SubmitAndSnapshot(body, trigger);
  Flush();
  return submission;
}

RunManager::Submission RunManager::SubmitAndSnapshot(const json& body, std::string_view trigger) {
  Submission submission;
  auto request = ParseFullRunRequest(body, CurrentConfig()->api.max_run_duration);
  if (!request) {
    submission.error = request.error();
    return submission;
  }
  for (const std::string& name : request->probes) {
    if (FindProbe(name) == nullptr) {
      submission.error = "probes: \"" + name + "\" is not available in this daemon";
      return submission;
    }
  }
  std::lock_guard lock(mu_);
  if (stop_) {
    submission.status = Submission::Status::kConflict;
    submission.error = "the daemon is shutting down";
    return submission;
  }
  if (active_) {
    submission.status = Submission::Status::kConflict;
    submission.id = *active_;
    submission.error = "full run " + *active_ + " is still active; one full run at a time";
    return submission;
  }
  submission.status = Submission::Status::kAccepted;
  submission.id = NewIdLocked();
  json run = {{"id", submission.id},
              {"state", "queued"},
              {"probes", request->probes},
              {"options", request->options},
              {"duration", request->duration ? json(*request->duration) : json(nullptr)},
              {"created_unix_seconds", clock_.UnixSeconds()},
              {"started_unix_seconds", nullptr},
              {"finished_unix_seconds", nullptr},
              {"progress", {{"probes_done", 0}, {"probes_total", request->probes.size()}}},
              {"results", json::object()},
              {"outcomes", json::object()}};
  if (!trigger.empty()) run["trigger"] = trigger;
  runs_.push_back(std::move(run));
  active_ = submission.id;
  active_options_ = std::move(request->parsed);
  cancel_.store(false);
  spdlog::info("full run {} queued{}: {}", submission.id, trigger.empty() ? "" : " by the " + std::string(trigger),
               json(request->probes).dump());
  TrimLocked();
  PersistLocked();
  cv_.notify_all();
  return submission;
}

RunManager::CancelStatus RunManager::Cancel(std::string_view id) {
  {
    std::lock_guard lock(mu_);
    json* run = FindLocked(id);
    if (run == nullptr) return CancelStatus::kNotFound;
    const std::string state = run->value("state", "");
    if (IsFinal(state)) return CancelStatus::kFinished;
    if (state != "queued") {
      cancel_.store(true);
      spdlog::info("full run {}: cancel requested", std::string(id));
      return CancelStatus::kCancelling;
    }
    FinishLocked(*run, "cancelled", "cancelled before it started");
  }
  Flush();
  return CancelStatus::kCancelling;
}

std::optional<json> RunManager::Get(std::string_view id) const {
  std::lock_guard lock(mu_);
  const json* run = FindLocked(id);
  if (run == nullptr) return std::nullopt;
  return *run;
}

std::vector<json> RunManager::Recent(std::size_t limit) const {
  std::lock_guard lock(mu_);
  std::vector<json> recent;
  for (auto it = runs_.rbegin(); it != runs_.rend() && recent.size() < limit; ++it) recent.push_back(*it);
  return recent;
}

bool RunManager::Active() const {
  std::lock_guard lock(mu_);
  return active_.has_value();
}

std::shared_ptr<prometheus::Collectable> RunManager::Metrics() { return std::make_shared<Collector>(*this); }

void RunManager::Worker() {
  for (;;) {
    std::string id;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] {
        if (stop_) return true;
        if (!active_) return false;
        const json* run = FindLocked(*active_);
        return run != nullptr && run->value("state", "") == "queued";
      });
      if (stop_) return;
      id = *active_;
    }
    Execute(id);
  }
}

// What Execute() carries from one step to the next.
struct RunManager::Execution {
  std::string id;
  std::vector<std::string> probes;
  std::map<std::string, std::shared_ptr<const probes::ProbeOptions>> options;
  std::shared_ptr<const config::Config> config;
  std::chrono::steady_clock::time_point started;
  std::optional<std::string> failure;  // the first probe that did not succeed: "<probe>: <reason>"
};

void RunManager::Execute(const std::string& id) {
  std::optional<Execution> run = MarkRunning(id);
  if (!run) return;
  spdlog::info("full run {} started; pausing scheduled runs", id);
  CallHook(id, hooks_.pause_scheduler, "pausing the scheduler");
  run->config = CurrentConfig();
  run->started = clock_.Now();
  for (std::size_t i = 0; i < run->probes.size() && !cancel_.load(); ++i) {
    if (clock_.Now() - run->started >= run->config->api.max_run_duration) {
      if (!run->failure) {
        run->failure = "api.max_run_duration (" + config::FormatDuration(run->config->api.max_run_duration) +
                       ") reached before " + run->probes[i];
      }
      break;
    }
    ShowProbeStarting(*run, i);
    const auto probe_started = clock_.Now();
    const probes::ProbeOutcome outcome = RunOneProbe(*run, i);
    RecordOutcome(*run, i, outcome, Seconds(clock_.Now() - probe_started));
  }
  CallHook(id, hooks_.resume_scheduler, "resuming the scheduler");
  spdlog::info("full run {} ended; scheduled runs resume", id);
  Finish(*run);
}

std::optional<RunManager::Execution> RunManager::MarkRunning(const std::string& id) {
  Execution execution;
  execution.id = id;
  {
    std::lock_guard lock(mu_);
    json* run = FindLocked(id);
    if (run == nullptr || run->value("state", "") != "queued") return std::nullopt;
    (*run)["state"] = "running";
    (*run)["started_unix_seconds"] = clock_.UnixSeconds();
    execution.probes = (*run)["probes"].get<std::vector<std::string>>();
    execution.options = std::move(active_options_);
    PersistLocked();
  }
  Flush();
  return execution;
}

void RunManager::CallHook(const std::string& id, const std::function<void()>& hook, const char* what) {
  if (!hook) return;
  // The hooks are the daemon's; a throwing one must not kill the thread.
  try {
    hook();
  } catch (const std::exception& e) {
    spdlog::error("full run {}: {} failed: {}", id, what, e.what());
  }
}

std::shared_ptr<const config::Config> RunManager::CurrentConfig() const {
  std::shared_ptr<const config::Config> config;
  if (hooks_.config) config = hooks_.config();
  if (!config) config = std::make_shared<const config::Config>(probes::DefaultConfig());
  return config;
}

void RunManager::ShowProbeStarting(const Execution& execution, std::size_t index) {
  std::lock_guard lock(mu_);
  if (json* run = FindLocked(execution.id)) {
    (*run)["progress"] = {{"probe", execution.probes[index]},
                          {"test", ""},
                          {"probe_elapsed_seconds", 0.0},
                          {"probe_remaining_seconds", nullptr},
                          {"elapsed_seconds", Seconds(clock_.Now() - execution.started)},
                          {"probes_done", index},
                          {"probes_total", execution.probes.size()}};
  }
}

probes::ProbeOutcome RunManager::RunOneProbe(Execution& execution, std::size_t index) {
  const std::string& id = execution.id;
  const std::string& name = execution.probes[index];
  const auto run_started = execution.started;
  FullRunCallbacks callbacks;
  // The cap counts from the run's start on the manager's clock; the probe
  // watches a steady-clock deadline.
  const auto left = execution.config->api.max_run_duration - (clock_.Now() - run_started);
  callbacks.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(left);
  callbacks.on_progress = [this, &id, run_started](const probes::Progress& progress) {
    std::lock_guard lock(mu_);
    json* run = FindLocked(id);
    if (run == nullptr) return;
    json& p = (*run)["progress"];
    p["test"] = progress.current_test;
    p["probe_elapsed_seconds"] = Seconds(progress.elapsed);
    p["probe_remaining_seconds"] = Seconds(progress.remaining);
    p["elapsed_seconds"] = Seconds(clock_.Now() - run_started);
  };
  probes::Probe* probe = FindProbe(name);
  if (probe == nullptr) return probes::ProbeOutcome::Failure("unknown_probe", "no probe named " + name);
  return RunFullProbe(*probe, *execution.config, execution.options[name], &cancel_, callbacks);
}

void RunManager::RecordOutcome(Execution& execution, std::size_t index, const probes::ProbeOutcome& outcome,
                               double took) {
  const std::string& id = execution.id;
  const std::string& name = execution.probes[index];
  if (outcome.status != Status::kSuccess) {
    spdlog::warn("full run {}: {} {} ({}): {}", id, name, probes::ToString(outcome.status), StoredText(outcome.reason),
                 StoredText(outcome.message));
    if (!execution.failure) execution.failure = StoredText(name + ": " + outcome.reason);
  }
  {
    std::lock_guard lock(mu_);
    json* run = FindLocked(id);
    if (run == nullptr) return;
    (*run)["results"][name] = StoredResult(outcome.result);
    (*run)["outcomes"][name] = {{"status", probes::ToString(outcome.status)},
                                {"reason", StoredText(outcome.reason)},
                                {"message", StoredText(outcome.message)},
                                {"duration_seconds", took},
                                {"finished_unix_seconds", clock_.UnixSeconds()}};
    (*run)["progress"]["probes_done"] = index + 1;
    (*run)["progress"]["elapsed_seconds"] = Seconds(clock_.Now() - execution.started);
    PersistLocked();
  }
  Flush();
}

void RunManager::Finish(const Execution& execution) {
  {
    std::lock_guard lock(mu_);
    json* run = FindLocked(execution.id);
    if (run == nullptr) {
      if (active_ && *active_ == execution.id) active_.reset();
    } else if (stop_ && cancel_.load()) {
      FinishLocked(*run, "failed", "interrupted");
    } else if (cancel_.load()) {
      FinishLocked(*run, "cancelled", "cancelled by request");
    } else if (execution.failure) {
      FinishLocked(*run, "failed", *execution.failure);
    } else {
      FinishLocked(*run, "succeeded", "");
    }
  }
  Flush();
}

}  // namespace hostperf::runs
