#pragma once

#include "directory_setup.h"
#include "feedback.h"
#include "hostperf/probes/probe.h"
#include "plan.h"

namespace hostperf::probes::disk {

// The sidecar's scheduled burst: vioperf's four tests, one pass each over
// the plan's files (bytes_per_run written) in each configured directory,
// at idle I/O priority and within the hourly byte budget; a directory
// without room or budget is skipped, not failed.
ProbeOutcome RunScheduledBurst(const RunContext& context, const Plan& plan, const DiskServices& services,
                               const Feedback& feedback);

}  // namespace hostperf::probes::disk
