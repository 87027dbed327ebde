// Helpers shared by the fault-injection tests (fault_net_test.cc,
// fault_http_test.cc): a daemon's resident memory and open descriptors from
// /proc, raw loopback sockets, and samples read from an exposition.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "hostperf/probes/net/sockets.h"

namespace hostperf::testing {

// VmRSS of a process in KiB (0 if it is gone).
long ResidentKib(pid_t pid);

// Resident memory a daemon may gain while a fault lasts. Under
// AddressSanitizer (the daemon is built like the tests) freed memory waits in
// ASan's quarantine, 256 MiB by default, before it is reused, so churn alone
// raises RSS by up to that much: the bound allows for it.
#if defined(HOSTPERF_UNDER_ASAN)
constexpr long kRssGrowthBoundKib = (64 + 256) * 1024;
#else
constexpr long kRssGrowthBoundKib = 64 * 1024;
#endif
// Entries in /proc/PID/fd (-1 if the process is gone).
int OpenFds(pid_t pid);

// A blocking TCP connection to 127.0.0.1:port (invalid on failure).
probes::net::Fd ConnectLoopback(std::uint16_t port);

// True once the peer has ended a connected socket (EOF or reset), after
// discarding whatever it sent first (an error response).
bool ServerClosed(int fd);

// A UDP socket bound to 127.0.0.1:port (0: any free port), non-blocking.
probes::net::Fd BoundUdp(std::uint16_t port);

// The value of `series` (name with its labels, exactly as exposed) in a
// Prometheus text exposition.
std::optional<double> Sample(const std::string& exposition, const std::string& series);

// What a raw HTTP exchange ended with.
struct RawReply {
  int status = 0;          // the status line's code; 0: closed without a response
  bool timed_out = false;  // neither a whole response nor a close before the deadline
  std::string head;        // the response's first bytes
};
// Sends `request` (stopping quietly when the server closes the connection
// early, as it may after refusing an oversized request) and reads until a
// whole response (by its Content-Length) arrived, the server closes, or
// `timeout` passes.
RawReply RawHttpExchange(std::uint16_t port, const std::string& request, std::chrono::milliseconds timeout);

}  // namespace hostperf::testing
