#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "hostperf/base/result.h"

namespace hostperf::runs {

// Reads api.token_file: the bearer token is the file's content without
// surrounding whitespace. Unreadable, empty or containing whitespace or
// control characters inside: an error naming the file (reason bad_config).
Result<std::string> ReadApiToken(const std::filesystem::path& path);

// True if `given` equals `expected`, in time independent of where they
// differ (both are hashed, then compared with CRYPTO_memcmp).
bool TokensEqual(std::string_view given, std::string_view expected);

// `text` without surrounding whitespace: a token as read from its file or a
// request header.
std::string_view TrimToken(std::string_view text);

}  // namespace hostperf::runs
