#include "hostperf/probes/cpu/baseline_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include "hostperf/base/files.h"
#include "hostperf/probes/state_file.h"
#include "hostperf/probes/stats.h"

namespace hostperf::probes::cpu {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kFileName = "cpu_baselines.json";
constexpr const char* kBaselineKey = "baseline_cpu_seconds";
constexpr const char* kSamplesKey = "samples";
constexpr const char* kCalibratedAtKey = "calibrated_at";

bool IsPositiveSeconds(const json& value) {
  return value.is_number() && std::isfinite(value.get<double>()) && value.get<double>() > 0;
}

// Keeps only well-formed fields of one fingerprint's entry (hand edits and
// truncated writes must not break the probe); nullopt if nothing usable.
std::optional<json> SanitizeEntry(const json& entry) {
  if (!entry.is_object()) return std::nullopt;
  json clean = {{kSamplesKey, json::array()}};
  if (auto it = entry.find(kSamplesKey); it != entry.end() && it->is_array()) {
    for (const json& sample : *it) {
      if (IsPositiveSeconds(sample)) clean[kSamplesKey].push_back(sample.get<double>());
    }
  }
  if (auto it = entry.find(kBaselineKey); it != entry.end() && IsPositiveSeconds(*it)) {
    clean[kBaselineKey] = it->get<double>();
    if (auto at = entry.find(kCalibratedAtKey); at != entry.end() && at->is_number_integer()) {
      clean[kCalibratedAtKey] = *at;
    }
  }
  return clean;
}

std::time_t SystemNow() { return std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()); }

}  // namespace

BaselineStore::BaselineStore(fs::path state_directory, WallClock wall_clock)
    : directory_(std::move(state_directory)),
      path_(directory_ / kFileName),
      wall_clock_(wall_clock ? std::move(wall_clock) : WallClock(SystemNow)) {
  Load();
}

void BaselineStore::Load() {
  if (directory_.empty()) return;  // no state directory: in memory only
  RemoveStaleTemporaries(path_);   // a crash mid-write
  std::error_code ec;
  if (!fs::exists(path_, ec)) return;  // first start: nothing calibrated yet
  const auto text = ReadStateFile(path_);
  if (!text) {
    spdlog::warn("cpu probe: cannot read {}; starting without stored baselines", path_.string());
    return;
  }
  // A file nested too deep is refused before it is built (as corrupt).
  json doc = JsonDepthError(*text, kMaxStoredJsonDepth).empty()
                 ? json::parse(*text, nullptr, /*allow_exceptions=*/false)
                 : json(json::value_t::discarded);
  if (!doc.is_object()) {
    // Keep the bad file for inspection; the next save writes a fresh one.
    const fs::path aside = fs::path(path_).concat(".corrupt");
    fs::rename(path_, aside, ec);
    spdlog::warn("cpu probe: {} is corrupt (not a JSON object); ignoring it{}", path_.string(),
                 ec ? "" : " (moved to " + aside.string() + ")");
    return;
  }
  for (const auto& [fingerprint, entry] : doc.items()) {
    if (auto clean = SanitizeEntry(entry)) {
      entries_[fingerprint] = std::move(*clean);
    } else {
      spdlog::warn("cpu probe: ignoring malformed baseline entry '{}' in {}", fingerprint, path_.string());
    }
  }
}

void BaselineStore::Save() {
  if (directory_.empty()) return;
  std::error_code ec;
  fs::create_directories(directory_, ec);
  if (!ec) ec = WriteFileAtomically(path_, entries_.dump(2) + "\n");
  if (!ec) {
    if (write_error_logged_) spdlog::info("cpu probe: {} is writable again", path_.string());
    write_error_logged_ = false;
    return;
  }
  // Once per streak of failures: the probe goes on with in-memory baselines.
  if (!write_error_logged_) {
    spdlog::warn("cpu probe: cannot write {}: {}; keeping CPU baselines in memory only", path_.string(), ec.message());
    write_error_logged_ = true;
  }
}

Baseline BaselineStore::GetLocked(const std::string& fingerprint, const CpuProbeConfig& config) const {
  Baseline baseline;
  baseline.samples_needed = std::max<std::size_t>(1, config.calibration_runs);
  if (auto it = entries_.find(fingerprint); it != entries_.end()) {
    baseline.samples = it->at(kSamplesKey).size();
    if (auto value = it->find(kBaselineKey); value != it->end()) {
      baseline.seconds = value->get<double>();
    }
  }
  if (auto it = config.baselines.find(fingerprint); it != config.baselines.end()) {
    baseline.seconds = std::chrono::duration<double>(it->second).count();
    baseline.from_config = true;
  }
  return baseline;
}

Baseline BaselineStore::Get(const std::string& fingerprint, const CpuProbeConfig& config) const {
  std::lock_guard lock(mutex_);
  return GetLocked(fingerprint, config);
}

Baseline BaselineStore::AddCalibrationSample(const std::string& fingerprint, double cpu_seconds,
                                             const CpuProbeConfig& config) {
  std::lock_guard lock(mutex_);
  Baseline baseline = GetLocked(fingerprint, config);
  if (baseline.seconds || !(std::isfinite(cpu_seconds) && cpu_seconds > 0)) return baseline;

  json& entry = entries_[fingerprint];
  if (!entry.is_object()) entry = {{kSamplesKey, json::array()}};
  json& samples = entry[kSamplesKey];
  samples.push_back(cpu_seconds);
  if (samples.size() >= baseline.samples_needed) {
    const std::vector<double> values = samples.get<std::vector<double>>();
    entry[kBaselineKey] = Median(values);
    entry[kCalibratedAtKey] = static_cast<std::int64_t>(wall_clock_());
    spdlog::info("cpu probe: baseline for binary {} calibrated: {:.6f}s CPU over {} runs", fingerprint,
                 entry[kBaselineKey].get<double>(), values.size());
  }
  Save();
  return GetLocked(fingerprint, config);
}

}  // namespace hostperf::probes::cpu
