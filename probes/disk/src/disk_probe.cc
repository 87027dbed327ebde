#include "hostperf/probes/disk/disk_probe.h"

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "directory_setup.h"
#include "disk_metrics.h"
#include "gpcheckperf_run.h"
#include "hostperf/probes/disk/members.h"
#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/disk/scratch.h"
#include "plan.h"
#include "scheduled_run.h"
#include "vioperf_run.h"

// The disk probe: its metrics and services, and the dispatch to its faces
// (the scheduled burst; vioperf's and gpcheckperf's full runs).
namespace hostperf::probes::disk {
namespace {

class DiskProbe final : public Probe {
 public:
  DiskProbe(const ProbeDeps& deps, DiskProbeSeams seams)
      : seams_(std::move(seams)),
        roots_(deps.roots),
        state_directory_(deps.state_directory),
        metrics_(RegistryFor(deps)) {}

  std::string_view Name() const override { return "disk"; }

  void StartServices(const config::ProbeConfig& section) override {
    // Directory -> its info labels; none while disabled. The device class is
    // read here, once per start-up and reload, not per run: a directory's
    // storage does not change under a running daemon.
    std::map<std::string, prometheus::Labels> roles;
    if (section.schedule.enabled) {
      const auto& disk = dynamic_cast<const DiskProbeConfig&>(*section.settings);
      for (const auto& path : ConfiguredDirectories(disk, state_directory_)) {
        roles.emplace(path, prometheus::Labels{{"directory", path},
                                               {"role", RoleOf(disk, path)},
                                               {"device_class", DeviceClassOf(path, roots_)}});
      }
    }
    if (metrics_.Generation() == 0) {
      // Start-up: the leftovers of runs of a process that no longer runs (a
      // crash, a kill -9), in every directory they recorded.
      if (const int removed = CleanRecordedLeftovers(state_directory_); removed > 0) {
        spdlog::info("disk probe: removed {} leftover scratch file(s) of crashed runs", removed);
      }
    }
    metrics_.Reconfigure(std::move(roles));
  }

 private:
  static std::string RoleOf(const DiskProbeConfig& config, const std::string& path) {
    if (const auto it = config.directory_roles.find(path); it != config.directory_roles.end()) return it->second;
    return std::string(config.directories.empty() ? kStateRole : kDataRole);
  }

  DiskServices Services() { return {roots_, state_directory_, metrics_, seams_}; }

  ProbeOutcome MeasureScheduled(const ScheduledContext& ctx) override {
    Plan plan = MakeScheduledPlan(ctx.Settings<DiskProbeConfig>(), state_directory_);
    plan.generation = metrics_.Generation();
    return RunScheduledBurst(ctx, plan, Services());
  }

  ProbeOutcome MeasureFull(const FullRunContext& ctx) override {
    Plan plan = MakeFullPlan(ctx.Settings<DiskProbeConfig>(), ctx.Options<FullRunOptions>(), state_directory_, roots_);
    plan.generation = metrics_.Generation();
    if (plan.method == FullRunMethod::kGpcheckperf) return RunGpcheckperf(ctx, plan, Services());
    return RunVioperf(ctx, plan, Services());
  }

  DiskProbeSeams seams_;
  SystemRoots roots_;
  std::filesystem::path state_directory_;
  DiskMetrics metrics_;
};

}  // namespace

std::unique_ptr<Probe> CreateDiskProbe(const ProbeDeps& deps) { return CreateDiskProbe(deps, DiskProbeSeams{}); }

std::unique_ptr<Probe> CreateDiskProbe(const ProbeDeps& deps, DiskProbeSeams seams) {
  return std::make_unique<DiskProbe>(deps, std::move(seams));
}

}  // namespace hostperf::probes::disk
