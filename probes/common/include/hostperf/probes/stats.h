#pragma once

#include <algorithm>
#include <span>
#include <vector>

namespace hostperf::probes {

// Median of the values (mean of the middle two for an even count); 0 if empty.
inline double Median(std::span<const double> values) {
  if (values.empty()) return 0;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t mid = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

}  // namespace hostperf::probes
