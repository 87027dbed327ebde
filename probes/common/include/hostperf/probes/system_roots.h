#pragma once

#include <filesystem>

namespace hostperf::probes {

// Where /proc and /sys are: tests point these at fixture trees.
struct SystemRoots {
  std::filesystem::path proc = "/proc";
  std::filesystem::path sys = "/sys";
};

}  // namespace hostperf::probes
