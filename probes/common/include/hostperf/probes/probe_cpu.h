#pragma once

#include <cstdint>

namespace hostperf::probes {

// CPU time of probe work, which is what the CPU budget is charged with: the
// thread CPU time (CLOCK_THREAD_CPUTIME_ID) of every thread while it runs a
// probe, summed process-wide. The scheduler's worker thread holds one scope
// for the whole run, and a probe's own worker threads (disk workload, CPU
// throttle, memory STREAM) one each. /metrics scrapes, the HTTP server, the
// peer responder and password checks run outside any scope and cost the
// budget nothing. Scopes nest: only the outermost one of a thread counts.
class ProbeCpuScope {
 public:
  ProbeCpuScope();
  ~ProbeCpuScope();
  ProbeCpuScope(const ProbeCpuScope&) = delete;
  ProbeCpuScope& operator=(const ProbeCpuScope&) = delete;

 private:
  std::int64_t start_ns_ = -1;  // -1: a nested scope, which does not count
};
// The CPU seconds of every probe scope that has ended so far.
double ProbeCpuSeconds();

}  // namespace hostperf::probes
