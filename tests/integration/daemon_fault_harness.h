#pragma once

// Shared by the disk and signal fault-injection tests (fault_disk_test.cc,
// fault_signals_test.cc): hostperf_exporter started on port 0 with a config
// file and watched through /metrics, and the leftovers check every fault ends
// with. Exposition samples and free ports: net_http_fault_harness.h.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {

class FaultDaemon {
 public:
  // `prefix`: a command that runs the daemon, e.g. {"ip", "netns", "exec", NAME}.
  explicit FaultDaemon(const std::string& config_file, const std::vector<std::string>& prefix = {});

  int Port();  // waits for the "listening" log line
  std::optional<HttpReply> Get(const std::string& path);
  // /metrics, or "" when the scrape got no 200 answer.
  std::string Metrics();
  // `series` on /metrics, -1 when absent or the scrape failed.
  double Value(const std::string& series);
  // Polls /metrics until `series` >= `at_least` (false on timeout or exit).
  bool WaitFor(const std::string& series, double at_least, std::chrono::milliseconds timeout);
  // The run API, with a bearer token.
  HttpReply Call(const std::string& method, const std::string& path, const std::string& token,
                 const std::string& body = "");
  ChildProcess& process() { return process_; }

 private:
  ChildProcess process_;
  int port_ = 0;
};

// Polls `condition` every 50 ms until it holds (true) or `timeout` passes.
bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

// Regular files under `root` (recursively) named like the disk probe's
// scratch files ("hostperf-disk-..."): there must never be any once a run
// is over.
std::vector<std::string> ScratchFilesUnder(const std::string& root);

}  // namespace hostperf::testing
