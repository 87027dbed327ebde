#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/config/units.h"

namespace hostperf::config {

using namespace std::chrono_literals;

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

struct ApiConfig {
  std::string token_file;  // empty: run API disabled
};

// Whole-sidecar impact budget (enforced from the budget issue on).
struct BudgetConfig {
  double cpu_seconds_per_hour = 36;
  std::uint64_t disk_bytes_per_hour = 2 * kGiB;
  std::uint64_t net_bytes_per_hour = 2 * kGiB;
  // Busy gate: skip scheduled probes (reason host_busy) while the share of
  // time some task waited for CPU / for I/O over the last 10 s (Linux PSI
  // "some avg10", percent) is above this. 0 disables the gate.
  double busy_cpu_pressure = 0;
  double busy_io_pressure = 0;
};

struct SchedulerConfig {
  // Each probe's first run is placed at a random point in
  // [0, min(first_run_splay, interval)) after start.
  Duration first_run_splay = 30s;
  // Every later run is interval * (1 + u), u uniform in [-jitter, +jitter],
  // so that a fleet started together drifts apart.
  double jitter = 0.1;
};

struct ProbeSchedule {
  bool enabled = true;
  Duration interval;
  Duration timeout;
};

struct CpuProbeConfig {
  ProbeSchedule schedule{true, 5min, 1min};
  // Scheduled runs used to calibrate a new binary's baseline (median).
  std::uint32_t calibration_runs = 5;
  // Timings of the ~70 us task per load level in a scheduled run.
  std::uint32_t throttle_samples = 25;
  // Idle gap before each low-load timing (lets the core drop to a low state).
  Duration low_load_gap = 10ms;
  // Busy spin before each high-load timing.
  Duration high_load_spin = 2ms;
  // Per binary fingerprint: CPU time of the scheduled workload. Overrides
  // calibration for that fingerprint.
  std::map<std::string, Duration> baselines;
};

struct MemoryProbeConfig {
  ProbeSchedule schedule{true, 15min, 1min};
  std::uint64_t memory_budget = 256 * kMiB;
};

struct DiskProbeConfig {
  ProbeSchedule schedule{true, 15min, 5min};
  std::vector<std::string> directories;  // empty: <state_directory>/disk
  std::uint64_t bytes_per_run = 64 * kMiB;
  std::uint32_t threads = 1;  // scheduled runs (full runs: all online CPUs)
  std::uint32_t files_per_thread = 1;
  std::uint64_t max_buffer_size = 1 * kMiB;  // bytes per read/write
  bool disable_direct_io = false;
  bool disable_crc = false;
  std::uint64_t reserve = 1 * kGiB;  // free space left untouched beyond the files
};

struct NetProbeConfig {
  ProbeSchedule schedule{true, 30s, 20s};
  std::string bind_address;  // empty: loopback only when no secret_file
  std::vector<std::uint16_t> ports{14159};
  std::string secret_file;
  std::vector<std::string> peers;
  std::string peers_file;
  std::uint32_t max_peers_per_cycle = 8;
  // Latency: UDP pings per peer per run, sent open-loop every packet_interval.
  std::uint32_t packets_per_cycle = 20;
  Duration packet_interval = 10ms;
  Duration reply_timeout = 500ms;  // wait for replies after the last ping
  // Scheduled throughput burst: one peer per run, TCP and UDP alternating,
  // within budget.net_bytes_per_hour.
  Duration throughput_duration = 250ms;
  std::uint64_t throughput_rate = 32 * kMiB;  // bytes per second
  std::uint32_t udp_datagram_size = 8192;     // bytes, 64 to 65000
  // Responder: TCP connections at once (also the connection test's maximum)
  // and UDP requests per second per source address.
  std::uint32_t max_connections = 64;
  std::uint32_t rate_limit = 1000;
};

struct ProbesConfig {
  CpuProbeConfig cpu;
  MemoryProbeConfig memory;
  DiskProbeConfig disk;
  NetProbeConfig net;
};

struct Config {
  std::string state_directory;  // empty: see ResolveStateDirectory
  ApiConfig api;
  BudgetConfig budget;
  SchedulerConfig scheduler;
  ProbesConfig probes;
  // Where it came from: a path, or "<embedded defaults>".
  std::string source = "<embedded defaults>";
};

// The embedded defaults (what runs with no --config.file).
Config Defaults();

// Parses and validates TOML. Errors read "source:line:column: message"
// (source is the file name given). Unknown keys, wrong types and
// out-of-range values are errors.
Result<Config> LoadString(std::string_view toml, std::string_view source);
Result<Config> LoadFile(const std::filesystem::path& path);

// $STATE_DIRECTORY (systemd's StateDirectory=), else /var/lib/hostperf if it
// is writable (or creatable), else ./hostperf-state. A configured
// state_directory wins. `getenv` and `writable` are seams for tests.
std::filesystem::path ResolveStateDirectory(const Config& config,
                                            const std::function<std::optional<std::string>(const char*)>& getenv = {},
                                            const std::function<bool(const std::filesystem::path&)>& writable = {});

}  // namespace hostperf::config
