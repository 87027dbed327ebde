#pragma once

#include "directory_setup.h"
#include "hostperf/probes/probe.h"
#include "plan.h"

// The reference-tool face of the disk probe: gpcheckperf's method.
namespace hostperf::probes::disk {

// gpcheckperf's disk test (FullRunMethod::kGpcheckperf, `hostperf check -r
// d`): one sequential writer per directory, all at once, data_size in total
// (default twice the RAM); then one reader per directory, all at once. Each
// pass is timed from its first start to its last end, so the host's figure
// is its directories' combined bandwidth; every directory's own interval is
// in the result. Local directories only.
ProbeOutcome RunGpcheckperf(const FullRunContext& context, const Plan& plan, const DiskServices& services);

}  // namespace hostperf::probes::disk
