#pragma once
// TEMPORARY (wip): the two-faces contexts until the lead's interface lands.
#include "hostperf/probes/probe.h"
namespace hostperf::probes {
using ScheduledContext = RunContext;
using FullRunContext = RunContext;
}  // namespace hostperf::probes
