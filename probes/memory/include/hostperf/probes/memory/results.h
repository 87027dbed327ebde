#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hostperf::probes::memory {

// Typed readers of a memory (STREAM) full run's result JSON, so that code
// outside this folder (hostperf check) does not depend on its keys.

// A kernel's best rate over the timed iterations, as STREAM reports it.
struct KernelRate {
  std::string kernel;  // "copy", "scale", "add", "triad"
  double best_bytes_per_second = 0;
};
// The kernels in result order; a kernel without a rate is left out.
std::vector<KernelRate> ReadBestKernelRates(const nlohmann::json& result);
// One kernel's best rate; nullopt when the result has none for it.
std::optional<double> ReadBestKernelRate(const nlohmann::json& result, std::string_view kernel);

}  // namespace hostperf::probes::memory
