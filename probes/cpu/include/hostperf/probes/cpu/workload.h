#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

// The CPU workload is a chain of fixed integer-only "chunks" (hashing, table
// probes with data-dependent branches, a small sort). Integer-only so that the
// checksum is bit-identical under every compiler, flag set and sanitizer; the
// timing, not the result, is what depends on the binary. One chunk is also the
// ~70 us task the throttle test times.

// Scheduled runs: about 50 ms of work (the low-impact variant).
inline constexpr std::uint64_t kScheduledChunks = 750;
// Full runs: vcpuperf-sized, a few seconds.
inline constexpr std::uint64_t kFullChunks = 120000;

// One chunk: deterministic in (index, chain); returns the next chain value.
std::uint64_t RunChunk(std::uint64_t index, std::uint64_t chain);

// Known answer for RunWorkload(chunks).checksum; nullopt when not pinned.
std::optional<std::uint64_t> ExpectedChecksum(std::uint64_t chunks);

struct WorkloadResult {
  std::uint64_t chunks_requested = 0;
  std::uint64_t chunks_done = 0;
  std::uint64_t checksum = 0;
  // False when ShouldStop() cut the run short; checksum is then partial.
  bool complete = false;
  // Complete, a known answer exists, and the checksum matches it.
  bool valid = false;
  std::chrono::nanoseconds cpu_time{0};   // this thread's CPU time
  std::chrono::nanoseconds real_time{0};  // steady clock
};

// Runs `chunks` chained chunks on the calling thread; polls ctx.ShouldStop()
// every few chunks.
WorkloadResult RunWorkload(std::uint64_t chunks, const RunContext& ctx);

// CPU time consumed so far by the calling thread.
std::chrono::nanoseconds ThreadCpuTime();

}  // namespace hostperf::probes::cpu
