#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hostperf/base/http_client.h"
#include "hostperf/probes/probe.h"

namespace hostperf::cluster {

// The client side of the run API (docs/operator-guide.md, "On-demand full runs"): `hostperf check -h HOST`
// runs disk, stream and network tests on other hosts through their
// hostperf_exporter, the way gpcheckperf runs its binaries over SSH.

struct RemoteRunOptions {
  // TLS and basic auth toward the peers (their --web.config.file); required.
  const HttpClient* client = nullptr;
  bool tls = false;   // https://
  std::string token;  // the peer's api.token_file content
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds request_timeout{10000};  // per HTTP request
  std::chrono::seconds run_timeout{4 * 3600};        // the whole run
  const std::atomic<bool>* cancel = nullptr;         // set: cancel the remote run and return
};

// Submits a full run of one probe to the run API at host:port, waits for it and
// returns the probe's outcome as the peer reported it (status, reason, message,
// result). Failures of the exchange itself are failures with a reason:
// remote_unreachable, remote_tls (handshake, certificates), remote_rejected
// (400/401/403), remote_busy (409), remote_error (unexpected answers),
// remote_timeout, cancelled. With basic auth the token goes in
// X-Hostperf-Token (Authorization carries the password), else as a bearer.
probes::ProbeOutcome RunOnRemote(const std::string& host, std::uint16_t port, std::string_view probe,
                                 const nlohmann::json& options, const RemoteRunOptions& settings);

}  // namespace hostperf::cluster
