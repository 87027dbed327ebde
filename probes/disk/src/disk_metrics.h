#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/disk/members.h"
#include "hostperf/probes/disk/workload.h"

namespace hostperf::probes::disk {

// How one directory's run ended: no failure when it ran; else skipped (a
// scheduled run without room or budget) or failed.
struct DirectoryOutcome {
  std::optional<Failure> failure;
  bool skipped = false;

  static DirectoryOutcome Failed(Failure failure) { return {std::move(failure), false}; }
};

// The disk probe's metric families and the series of each directory. A
// reload (Reconfigure) removes every series of a directory no longer
// configured; a run started under an older configuration (its generation)
// then publishes only for directories still configured, so that it cannot
// bring a removed directory's series back. Thread-safe: runs publish while
// a reload may remove.
class DiskMetrics {
 public:
  // Registers the families on `registry` (kept: the families live there).
  explicit DiskMetrics(std::shared_ptr<prometheus::Registry> registry);

  // The configuration generation: Reconfigure calls so far.
  std::uint64_t Generation() const;

  // A start-up or reload: `roles` maps each configured directory to its
  // hostperf_disk_directory_info labels (empty while the probe is disabled).
  void Reconfigure(std::map<std::string, prometheus::Labels> roles);

  // A directory's own outcome: success per directory, its reason counted,
  // and a failed directory's figures dropped. A skip and a cancellation
  // leave them.
  void RecordDirectory(std::uint64_t generation, const std::string& path, const DirectoryOutcome& outcome);

  // The array behind `path` and what each member did during the run.
  void RecordMembers(std::uint64_t generation, const std::string& path, const DirectoryStack& stack,
                     const std::vector<MemberActivity>& activity);

  // One test's latencies, bytes and verify errors, and its throughput (and
  // seek) figure from its summary.
  void Publish(std::uint64_t generation, const std::string& path, DiskTest test, const nlohmann::json& summary,
               const OpLatencies& latencies, const TestCounters& counters);

  // Latencies, bytes and verify errors only; gpcheckperf's method sets no
  // throughput gauge (its one-writer figures are not vioperf's).
  void PublishTotals(std::uint64_t generation, const std::string& path, const OpLatencies& latencies,
                     const TestCounters& counters);

 private:
  // Whether a run of `generation` may publish for `path`: false when a
  // reload during the run removed the directory. Under mutex_.
  bool Current(std::uint64_t generation, const std::string& path) const;
  // False when the run may not publish (see Current). Under mutex_.
  bool PublishTotalsLocked(std::uint64_t generation, const std::string& path, const OpLatencies& latencies,
                           const TestCounters& counters);
  // Every series of one directory. Under mutex_.
  void RemoveSeries(const std::string& path);
  // The member series of `path` not in `keep`. Under mutex_.
  void RemoveMemberSeries(const std::string& path, const std::set<prometheus::Labels>& keep);
  // The throughput and seek figures of one directory. Under mutex_.
  void RemoveFigures(const std::string& path);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Family<prometheus::Counter>& read_bytes_;
  prometheus::Family<prometheus::Counter>& written_bytes_;
  prometheus::Family<prometheus::Counter>& verify_errors_;
  prometheus::Family<prometheus::Gauge>& throughput_;
  prometheus::Family<prometheus::Gauge>& seeks_;
  prometheus::Family<prometheus::Gauge>& directory_info_;
  prometheus::Family<prometheus::Gauge>& directory_success_;
  prometheus::Family<prometheus::Counter>& directory_failures_;
  prometheus::Family<prometheus::Gauge>& members_;
  prometheus::Family<prometheus::Gauge>& member_info_;
  prometheus::Family<prometheus::Gauge>& member_seconds_per_op_;
  prometheus::Family<prometheus::Gauge>& member_ratio_;
  prometheus::Family<prometheus::Counter>& member_bytes_;
  // Per directory, the labels of every member series made (to remove them
  // with the directory, or when a device leaves the array).
  std::map<std::string, std::set<prometheus::Labels>> member_series_;
  std::set<std::pair<std::string, std::string>> failure_reasons_;  // (directory, reason) series made
  // Guards the per-directory series against a reload removing them while a
  // run publishes (references from Family::Add are used only under it).
  mutable std::mutex mutex_;
  std::uint64_t generation_ = 0;                     // Reconfigure calls so far
  std::map<std::string, prometheus::Labels> roles_;  // configured directory -> its directory_info labels
  std::set<std::string> published_;                  // directories that have series
};

}  // namespace hostperf::probes::disk
