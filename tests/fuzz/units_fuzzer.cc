// libFuzzer target for the duration and size parsers (vioperf's grammar).
// Parsing must never crash, and whatever parses must survive a round trip
// through the formatter: Parse(Format(x)) == x.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hostperf/config/units.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hostperf::config;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto duration = ParseDuration(text); duration.ok()) {
    const auto again = ParseDuration(FormatDuration(*duration));
    if (!again.ok() || *again != *duration) std::abort();
  }
  if (const auto bytes = ParseSize(text); bytes.ok()) {
    const auto again = ParseSize(FormatSize(*bytes));
    if (!again.ok() || *again != *bytes) std::abort();
  }
  return 0;
}
