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

}  // namespace hostperf::probes::disk::hdfs
