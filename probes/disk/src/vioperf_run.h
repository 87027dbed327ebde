#pragma once

#include "directory_setup.h"
#include "hostperf/probes/probe.h"
#include "plan.h"

// The reference-tool face of the disk probe: vioperf's method.
namespace hostperf::probes::disk {

// vioperf's full run (`hostperf io`, the run API's default method): per
// directory in turn, Write, ReWrite, Read and SkipRead, the run's duration
// shared by its tests, a table row every log interval; hdfs:// directories
// get Read and SkipRead over WebHDFS. A directory without room fails the
// run. Each directory and row is reported through the context's callbacks
// as it comes.
ProbeOutcome RunVioperf(const FullRunContext& context, const Plan& plan, const DiskServices& services);

}  // namespace hostperf::probes::disk
