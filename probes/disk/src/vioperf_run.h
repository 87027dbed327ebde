#pragma once

#include "directory_setup.h"
#include "feedback.h"
#include "hostperf/probes/probe.h"
#include "plan.h"

namespace hostperf::probes::disk {

// vioperf's full run (`hostperf io`, the run API's default method): per
// directory in turn, Write, ReWrite, Read and SkipRead, the run's duration
// shared by its tests, a table row every log interval; hdfs:// directories
// get Read and SkipRead over WebHDFS. Each directory and row is reported
// through `feedback` as it comes.
ProbeOutcome RunVioperf(const RunContext& context, const Plan& plan, const DiskServices& services,
                        const Feedback& feedback);

}  // namespace hostperf::probes::disk
