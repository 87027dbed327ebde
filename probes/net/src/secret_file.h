#pragma once

// probes.net.secret_file, read for the responder and for the client side of
// both faces. Internal to the net probe.

#include <string>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/protocol.h"

namespace hostperf::probes::net {

// A secret from a file: its bytes, trailing whitespace removed; at least 16
// bytes. The file must be a small regular file readable by its owner only
// (like an OpenSSH private key); a failure's reason is "no_secret".
Result<Secret> ReadSecretFile(const std::string& path);

}  // namespace hostperf::probes::net
