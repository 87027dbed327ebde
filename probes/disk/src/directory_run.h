#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "directory_setup.h"
#include "feedback.h"
#include "hostperf/base/result.h"
#include "hostperf/probes/disk/scratch.h"
#include "hostperf/probes/disk/workload.h"
#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/probe.h"
#include "plan.h"

// vioperf's test sequence over one directory, and the loop over a run's
// directories: what the scheduled burst and vioperf's full run share.
namespace hostperf::probes::disk {

// The time left of a run (up to `end`), shared by the tests still to run:
// each test's slice ends at now + (end - now) / tests left. A run whose end
// has passed (a scheduled burst: end = its start) gives each test one pass.
struct TimeShare {
  std::chrono::steady_clock::time_point end;
  std::size_t tests_total = 0;
  std::size_t tests_done = 0;

  std::chrono::steady_clock::time_point NextSliceEnd(std::chrono::steady_clock::time_point now);
};

// One run over a plan's directories, as each directory's tests see it.
struct RunScope {
  const RunContext& context;  // its bounds, cancellation and budget
  const Plan& plan;
  const DiskServices& services;
  int cores = 1;  // physical cores: the rows' per-core figures
  TimeShare share;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  nlohmann::json rows = nlohmann::json::array();  // the table rows so far
};

// Runs one test on a workload (Workload::Run's signature; an
// HdfsReadWorkload's too).
using TestRunner = std::function<Result<void>(DiskTest test, std::chrono::steady_clock::time_point until,
                                              const std::atomic<bool>& stop, TestCounters& counters,
                                              OpLatencies& latencies, const std::function<void()>& tick)>;

// Runs `tests` in order through `run_test`, one table row per log interval
// (when the plan has one) and one at the end of each; stops at the first
// I/O error or when the run should stop. Publishes each test's figures and
// calls the after_test seam; writes the per-test summaries and the verify
// error count into `dir_json` and adds the latter to `verify_errors`.
Result<void> RunTests(RunScope& run, const Feedback& feedback, const std::string& path, std::span<const DiskTest> tests,
                      const TestRunner& run_test, nlohmann::json& dir_json, std::uint64_t& verify_errors);

// A face's word on a local directory once its data size is known (Write
// and ReWrite each write `total` bytes): none to go on, or the directory's
// outcome (the scheduled burst skips a directory without room or budget; a
// full run fails it).
using RoomCheck = std::function<std::optional<DirectoryOutcome>(const TestDirectory& dir, const std::string& path,
                                                                std::uint64_t total)>;

// vioperf's four tests over scratch files in one local directory, once
// `check_room` lets them run.
DirectoryOutcome RunDirectory(RunScope& run, const Feedback& feedback, const RoomCheck& check_room,
                              const std::string& path, nlohmann::json& dir_json);

// The head of a run's result: `mode` ("scheduled" or "full"), the host's
// cores and the plan's threads.
nlohmann::json RunHeader(std::string_view mode, const CpuTopology& topology, const Plan& plan);

// One directory of a run: its outcome; its own figures go into `dir_json`.
using DirectoryStep = std::function<DirectoryOutcome(const std::string& path, nlohmann::json& dir_json)>;

// Runs `step` over the plan's directories in order, recording each
// directory's outcome: the first failure fails the run (a cancellation or
// timeout ends it there), a run whose every directory was skipped is
// skipped. `result` (RunHeader's) gets the directories, rows and seconds.
ProbeOutcome RunDirectories(RunScope& run, nlohmann::json result, const DirectoryStep& step);

}  // namespace hostperf::probes::disk
