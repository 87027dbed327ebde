#pragma once

#include "directory_setup.h"
#include "hostperf/probes/probe.h"
#include "plan.h"

// The sidecar face of the disk probe.
namespace hostperf::probes::disk {

// The scheduled burst: vioperf's four tests, one pass each over the plan's
// files (bytes_per_run written) in each configured directory, at idle I/O
// priority and within the hourly byte budget; a directory without room or
// budget is skipped, not failed. Reports nothing while it goes.
ProbeOutcome RunScheduledBurst(const ScheduledContext& context, const Plan& plan, const DiskServices& services);

}  // namespace hostperf::probes::disk
