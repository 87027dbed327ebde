#include "hostperf/probes/cpu/cpu_probe.h"
#include "hostperf/probes/disk/disk_probe.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/memory/memory_probe.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes {

namespace {
// Adding a probe: a folder under probes/ and one line here.
constexpr ProbeRegistration kProbes[] = {
    {"cpu", &cpu::CreateCpuProbe},
    {"disk", &disk::CreateDiskProbe, &ValidateOptionsWith<&disk::ParseFullRunOptions>, DurationOption::kInterval},
    {"memory", &memory::CreateMemoryProbe, &ValidateOptionsWith<&memory::ParseMemoryOptions>},
    {"net", &net::CreateNetProbe, &ValidateOptionsWith<&net::ValidateNetOptions>, DurationOption::kSeconds},
};
}  // namespace

std::span<const ProbeRegistration> AllProbes() { return kProbes; }

}  // namespace hostperf::probes
