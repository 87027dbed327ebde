#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/base/files.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace prometheus {
class Collectable;
}

namespace hostperf::runs {

// What the daemon lends the run manager.
struct RunManagerHooks {
  // Pause stops scheduled runs (waiting for an in-flight one to end); Resume
  // restarts them. Both are called on the run thread, never on an HTTP worker.
  std::function<void()> pause_scheduler;
  std::function<void()> resume_scheduler;
  // The config a run starts with (the current one, after reloads).
  std::function<std::shared_ptr<const config::Config>()> config;
};

struct RunManagerOptions {
  // The run history (JSON), rewritten atomically on every state change.
  std::filesystem::path history_file;
  std::size_t history_limit = 20;  // finished runs kept
  // The history file's size cap: what a start-up will load. A history that
  // would outgrow it drops the oldest runs' results first (their records
  // stay); one found larger (or unreadable, or not JSON) at start-up is moved
  // aside, never overwritten.
  std::size_t history_max_bytes = kMaxStateFileBytes;
};

// Full runs of one or more probes, one run at a time, on the manager's own
// thread. Runs are JSON records:
//   {"id": "r-20261202-113501-1", "state": "queued|running|succeeded|failed|cancelled",
//    "reason": "...", "probes": [...], "options": {probe: {...}}, "duration": "60s" or null (as given),
//    "created_unix_seconds", "started_unix_seconds", "finished_unix_seconds",
//    "progress": {"probe", "test", "probe_elapsed_seconds", "probe_remaining_seconds",
//                 "elapsed_seconds", "probes_done", "probes_total"},
//    "results": {probe: <the probe's result JSON, as the CLI's --json prints it>},
//    "outcomes": {probe: {"status", "reason", "message", "duration_seconds", "finished_unix_seconds"}},
//    "trigger": "calendar" (only on runs not started through the run API)}
// Stored text from probes (outcome messages and reasons, a failure) is
// bounded to kMaxStoredTextBytes with control characters escaped, and a
// probe's result to kMaxStoredResultBytes of JSON (a larger one is replaced
// by {"truncated": true, "bytes": N}): a remote server's error body cannot
// grow the history.
inline constexpr std::size_t kMaxStoredTextBytes = 1024;
inline constexpr std::size_t kMaxStoredResultBytes = 1 << 20;

class RunManager {
 public:
  // `probes` must outlive the manager. Loads the history; runs that were
  // queued or running when the last process ended become failed
  // ("interrupted").
  RunManager(std::vector<probes::Probe*> probes, const Clock& clock, RunManagerHooks hooks, RunManagerOptions options);
  // Cancels an active run (recorded as failed, "interrupted") and joins.
  ~RunManager();
  RunManager(const RunManager&) = delete;
  RunManager& operator=(const RunManager&) = delete;

  struct Submission {
    enum class Status { kAccepted, kConflict, kInvalid };
    Status status = Status::kInvalid;
    std::string id;     // kAccepted: the new run; kConflict: the active one
    std::string error;  // kInvalid: why; kConflict: a message
  };
  // Validates a run API body and queues the run. `trigger` names who
  // started it when that was not the run API (e.g. "calendar").
  Submission Submit(const nlohmann::json& body, std::string_view trigger = {});

  enum class CancelStatus { kCancelling, kNotFound, kFinished };
  // Sets the run's cancel flag (the probe stops and removes its files) or
  // cancels it while still queued.
  CancelStatus Cancel(std::string_view id);

  std::optional<nlohmann::json> Get(std::string_view id) const;
  // Recent runs, newest first (full records).
  std::vector<nlohmann::json> Recent(std::size_t limit) const;
  bool Active() const;

  // hostperf_full_run_* families (see docs/metrics.md). The collectable
  // refers to this manager: drop it (stop scraping) before the manager.
  std::shared_ptr<prometheus::Collectable> Metrics();

  // Validates ids before they reach file names or log lines.
  static bool IsValidId(std::string_view id);

 private:
  class Collector;

  struct Execution;

  void Worker();
  // One full run, on the worker thread: mark it running, pause the
  // scheduler, run each probe and record its outcome, resume, finish. Each
  // step updates the run under mu_ and writes the history after releasing it.
  void Execute(const std::string& id);
  // nullopt when the run is no longer queued (cancelled meanwhile).
  std::optional<Execution> MarkRunning(const std::string& id);
  static void CallHook(const std::string& id, const std::function<void()>& hook, const char* what);
  std::shared_ptr<const config::Config> CurrentConfig() const;
  // Resets the run's progress to the start of probe `index`.
  void ShowProbeStarting(const Execution& execution, std::size_t index);
  // Runs probe `index` of the run, keeping the run's progress current.
  probes::ProbeOutcome RunOneProbe(Execution& execution, std::size_t index);
  void RecordOutcome(Execution& execution, std::size_t index, const probes::ProbeOutcome& outcome, double took);
  // The final state: interrupted, cancelled, failed (the first failure) or succeeded.
  void Finish(const Execution& execution);
  nlohmann::json* FindLocked(std::string_view id);
  const nlohmann::json* FindLocked(std::string_view id) const;
  probes::Probe* FindProbe(std::string_view name) const;
  // Records a final state, clears the active run and persists.
  void FinishLocked(nlohmann::json& run, std::string_view state, std::string reason);
  std::string NewIdLocked();
  Submission SubmitAndSnapshot(const nlohmann::json& body, std::string_view trigger);
  void LoadHistory();
  // Renames an unloadable history to <file>.unloadable-<unix time>[-N].
  void SetHistoryAside(std::string_view why);
  // Snapshots the history for the next Flush(), which writes it without
  // holding mu_ (a slow disk must not stall scrapes and GETs).
  void PersistLocked();
  void Flush();
  void TrimLocked();

  std::vector<probes::Probe*> probes_;
  const Clock& clock_;
  RunManagerHooks hooks_;
  RunManagerOptions options_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<nlohmann::json> runs_;   // oldest first
  std::optional<std::string> active_;  // queued or running
  // The active run's options, parsed at Submit (the history keeps the JSON).
  std::map<std::string, std::shared_ptr<const probes::ProbeOptions>> active_options_;
  bool stop_ = false;
  std::atomic<bool> cancel_{false};
  unsigned long sequence_ = 0;
  std::map<std::string, double> finished_counts_;  // final state -> runs since start
  std::optional<std::string> pending_history_;     // the newest unwritten snapshot
  // Each final run's JSON text, printed once by the thread that finished it
  // (the run thread, with a full stack), so that a Submit or Cancel on an
  // HTTP worker's small stack never walks the results' nesting again.
  std::map<std::string, std::string> final_text_;
  // Set when the history found at start-up could not be moved aside: it is
  // then never written, so that nothing overwrites it.
  bool history_read_only_ = false;
  std::size_t history_loaded_runs_ = 0;
  std::map<std::string, double> history_errors_;  // "unloadable", "write" -> count
  std::mutex write_mu_;                           // one history write at a time; taken before mu_
  std::thread worker_;
};

}  // namespace hostperf::runs
