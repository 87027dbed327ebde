#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "disk_metrics.h"
#include "feedback.h"
#include "hostperf/base/result.h"
#include "hostperf/probes/disk/disk_probe.h"
#include "hostperf/probes/disk/members.h"
#include "hostperf/probes/disk/scratch.h"
#include "hostperf/probes/probe.h"
#include "hostperf/probes/system_roots.h"
#include "plan.h"

// What every run of a local directory does around its tests, whichever
// face runs it: open the directory, record its scratch files, check its
// free space, and attribute the I/O to the array's members.
namespace hostperf::probes::disk {

// What the probe's runs share: the host's roots, the state directory (the
// scratch-file records, the default directory), the metrics and the test
// seams.
struct DiskServices {
  const SystemRoots& roots;
  const std::filesystem::path& state_directory;
  DiskMetrics& metrics;
  const DiskProbeSeams& seams;
};

// A new run's id: distinguishes its scratch files and data.
std::uint64_t NewRunId();

// Why a run stopped early: "cancelled" or "timeout", `where` appended.
Failure Stopped(const RunContext& context, const std::string& where);

// Opens a directory under test (creating the default one) and removes a
// crashed run's scratch files from it (counted in `dir_json`).
Result<std::unique_ptr<TestDirectory>> OpenDirectory(const DiskServices& services, const Plan& plan,
                                                     const std::string& path, nlohmann::json& dir_json);

// Recorded in the state directory before the first scratch file exists,
// so that the start-up after a crash cleans this directory too, whether
// configured or not; the record goes when the result is destroyed, which
// must be after the files. Null without a state directory on this host (a
// CLI run) or when it cannot be written (logged).
std::unique_ptr<RunRecord> RecordScratchFiles(const DiskServices& services, const std::string& path,
                                              std::uint64_t run_id);

// The free-space guard: `total` plus the plan's reserve must be free.
Result<void> CheckFreeSpace(const Plan& plan, const TestDirectory& dir, const std::string& path, std::uint64_t total);

// The array behind a directory, resolved at the start of a run; none when
// the directory is on no block device (tmpfs, NFS): nothing to attribute.
std::optional<MemberSampler> StartMembers(const DiskServices& services, const std::string& path);

// What each member did during the run: into `dir_json`, a "members"
// report, the metrics and, for a member well above its siblings, a
// finding (logged).
void RecordMembers(const DiskServices& services, const Plan& plan, const std::string& path,
                   const MemberSampler& sampler, const Feedback& feedback, nlohmann::json& dir_json);

}  // namespace hostperf::probes::disk
