#include "hostperf/probes/memory/results.h"

#include "hostperf/probes/figures.h"

namespace hostperf::probes::memory {

std::vector<KernelRate> ReadBestKernelRates(const nlohmann::json& result) {
  std::vector<KernelRate> rates;
  for (const nlohmann::json& kernel : ArrayField(result, "kernels")) {
    if (const auto rate = NumberField(kernel, "best_bytes_per_second")) {
      rates.push_back({TextField(kernel, "kernel"), *rate});
    }
  }
  return rates;
}

std::optional<double> ReadBestKernelRate(const nlohmann::json& result, std::string_view kernel) {
  for (const KernelRate& rate : ReadBestKernelRates(result)) {
    if (rate.kernel == kernel) return rate.best_bytes_per_second;
  }
  return std::nullopt;
}

}  // namespace hostperf::probes::memory
