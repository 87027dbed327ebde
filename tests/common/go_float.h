#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hostperf::testing {

// Go's strconv.FormatFloat(v, 'g', -1, 64), as client_golang prints `le` and
// `quantile`, derived with printf alone (an oracle independent of the
// exporter's FormatFloatLikeGo): the fewest significant digits that parse
// back to v, then %e when the decimal exponent is below -4 or at least 6,
// else %f.
inline std::string GoShortestOracle(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";
  char text[64];
  int digits = 1;
  for (; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*e", digits - 1, v);
    if (std::strtod(text, nullptr) == v) break;
  }
  const int exponent = std::atoi(std::strchr(text, 'e') + 1);
  if (exponent < -4 || exponent >= 6) return text;  // printf's %e: "7e-05", "1.5e+06"
  std::snprintf(text, sizeof(text), "%.*f", std::max(digits - 1 - exponent, 0), v);
  return text;
}

}  // namespace hostperf::testing
