// The net probe: the responder it hosts, the scheduled mesh (the sidecar
// face) and vnetperf's full run (the reference-tool face), over the metric
// families and the peer list they share.
#include "hostperf/probes/net/net_probe.h"

#include <memory>
#include <utility>

#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/net/module.h"
#include "net_metrics.h"
#include "peer_set.h"
#include "responder_host.h"
#include "scheduled_mesh.h"
#include "vnetperf_run.h"

namespace hostperf::probes::net {

namespace {

class NetProbe final : public Probe {
 public:
  NetProbe(const ProbeDeps& deps, NetProbeSeams seams)
      : route_(seams.route_interface ? std::move(seams.route_interface) : NetlinkRouteInterface),
        roots_(deps.roots),
        clock_(seams.clock != nullptr ? seams.clock : &real_clock_),
        registry_handle_(RegistryFor(deps)),
        mesh_metrics_(*registry_handle_),
        responder_metrics_(*registry_handle_),
        interface_metrics_(*registry_handle_),
        responder_(responder_metrics_, route_, roots_),
        mesh_(mesh_metrics_, interface_metrics_, responder_, peer_list_,
              PeerAssignment(seams.local_addresses ? std::move(seams.local_addresses) : InterfaceAddresses,
                             seams.resolve ? std::move(seams.resolve) : ResolveMember),
              route_, roots_, *clock_) {}

  std::string_view Name() const override { return "net"; }

  // Called at start-up and after every successful reload: restarts the
  // responder only when its settings (or the secret file's content) changed,
  // so a reload can move ports or rotate the secret without a restart.
  void StartServices(const config::ProbeConfig& section) override {
    responder_.Apply(dynamic_cast<const NetProbeConfig&>(*section.settings));
  }

 private:
  // The two faces: separate code over the responder, the peer list and the
  // metric families they share.
  ProbeOutcome MeasureScheduled(const ScheduledContext& ctx) override { return mesh_.Run(ctx); }
  ProbeOutcome MeasureFull(const FullRunContext& ctx) override {
    return VnetperfRun(ctx, responder_, peer_list_, roots_, route_).Run();
  }

  RouteLookup route_;
  SystemRoots roots_;
  hostperf::RealClock real_clock_;
  const hostperf::Clock* clock_;
  std::shared_ptr<prometheus::Registry> registry_handle_;  // RegistryFor(deps)
  // Registered in this order (the exposition's).
  MeshMetrics mesh_metrics_;
  ResponderMetrics responder_metrics_;
  InterfaceMetrics interface_metrics_;
  PeerList peer_list_;  // both faces read the peers file
  ResponderHost responder_;
  ScheduledMesh mesh_;
};

}  // namespace

std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps) {
  return std::make_unique<NetProbe>(deps, NetProbeSeams{});
}

std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps, NetProbeSeams seams) {
  return std::make_unique<NetProbe>(deps, std::move(seams));
}

}  // namespace hostperf::probes::net
