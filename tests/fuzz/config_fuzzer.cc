// libFuzzer target for the TOML config loader with every probe's section:
// any bytes as a config file. LoadConfigString must never crash, and every
// refusal must name the file and a position ("fuzz.toml:line:column: ...") or at least the file, as operators
// rely on that to find the mistake.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto loaded = hostperf::probes::LoadConfigString(text, "fuzz.toml");
  if (!loaded.ok() && loaded.error().rfind("fuzz.toml", 0) != 0) std::abort();
  return 0;
}
