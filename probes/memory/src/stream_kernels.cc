// STREAM's kernels. This file is compiled with -O3 (see CMakeLists.txt) so
// that the loops vectorise with the target's baseline instruction set; the
// functions are out of line and write through their pointers into memory the
// caller reads later, so the optimiser cannot drop or hoist them.
#include "hostperf/probes/memory/stream.h"

namespace hostperf::probes::memory {

void CopyKernel(double* __restrict c, const double* __restrict a, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) c[j] = a[j];
}

void ScaleKernel(double* __restrict b, const double* __restrict c, double scalar, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) b[j] = scalar * c[j];
}

void AddKernel(double* __restrict c, const double* __restrict a, const double* __restrict b, std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) c[j] = a[j] + b[j];
}

void TriadKernel(double* __restrict a, const double* __restrict b, const double* __restrict c, double scalar,
                 std::size_t n) {
  for (std::size_t j = 0; j < n; ++j) a[j] = b[j] + scalar * c[j];
}

void InitializeArrays(const StreamArrays& arrays) {
  for (std::size_t j = 0; j < arrays.elements; ++j) {
    arrays.a[j] = kInitialA;
    arrays.b[j] = kInitialB;
    arrays.c[j] = kInitialC;
  }
}

}  // namespace hostperf::probes::memory
