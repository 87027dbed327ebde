#pragma once

// --config.check and the daemon's start: a peer entry whose port answers
// HTTP is an HTTP endpoint copied into the peer list (a scrape target, a
// node_exporter), not a responder; every probe to it would see the peer
// down. Internal to the net probe.

#include <chrono>
#include <string>
#include <vector>

#include "hostperf/probes/net/peers.h"

namespace hostperf::probes::net {

// The first `sample` specs are each connected to (in parallel) and sent an
// HTTP request; those that answer with an HTTP status line come back. A
// peer that is down, refuses, or answers anything else is not one (a
// responder drops the request as junk). Returns within about `bound`
// whatever DNS and the network do: a check still going is left behind.
std::vector<PeerSpec> PeersAnsweringHttp(const std::vector<PeerSpec>& specs, std::size_t sample,
                                         std::chrono::milliseconds bound);

}  // namespace hostperf::probes::net
