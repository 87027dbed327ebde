#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace hostperf::probes::disk::hdfs {

// ASCII lower case: URL schemes, HTTP header values, query names.
inline std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Text from a remote server (error bodies, headers, redirect targets) as it
// may be stored and shown: at most kMaxRemoteText bytes, every byte outside
// printable ASCII (controls, escapes, UTF-8 that a cut could split) as '?'.
std::string CleanRemoteText(std::string_view text);

}  // namespace hostperf::probes::disk::hdfs
