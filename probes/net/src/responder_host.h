#pragma once

// The peer responder as the daemon hosts it (Probe::StartServices): started
// with probes.net's settings, restarted when they change, its secret and
// ports lent to the clients of both faces. Internal to the net probe.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/net/peers.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/responder.h"
#include "net_metrics.h"

namespace hostperf::probes::net {

struct NetProbeConfig;  // module.h

class ResponderHost final : private ResponderObserver {
 public:
  // `metrics` outlive the host; `route` and `roots` give each hello reply the
  // MTU toward its client.
  ResponderHost(ResponderMetrics& metrics, RouteLookup route, SystemRoots roots);
  ~ResponderHost() override;

  // Starts the responder, or restarts it when its settings (or the secret
  // file's content) changed, so that a reload can move ports or rotate the
  // secret without a restart. A secret file that turned bad keeps the
  // running responder on its old secret.
  void Apply(const NetProbeConfig& net);
  // Why the responder is not running (state, not a validation result);
  // empty while it serves.
  std::string Error();
  // The secret: the responder's (generated or from the file), else the file's.
  Result<Secret> ClientSecret(const NetProbeConfig& net);
  // The responder's first port, else the first configured, else 14159.
  std::uint16_t DefaultPort(const NetProbeConfig& net);
  // The ports the responder bound; empty while it is not running.
  std::vector<std::uint16_t> Ports();
  // The peer list's members, whose addresses are the only peers a plan may
  // make this host send to (names resolved here, when the list changed).
  void SetPlanPeers(const std::vector<PeerSpec>& members);

 private:
  // What the responder was started with; a change to any of it restarts it.
  struct Settings {
    std::string bind_address;
    std::vector<std::uint16_t> ports;
    std::string secret_file;
    Secret secret;  // the file's content (empty: a generated loopback secret)
    std::uint32_t max_connections = 0;
    std::uint32_t rate_limit = 0;
    std::uint64_t plan_max_rate = 0;
    bool plan_unlimited_rate = false;
    std::uint32_t plan_max_duration_ms = 0;
    std::uint32_t plan_max_sessions = 0;
    std::optional<OrchestrationPublicKey> orchestration_key = std::nullopt;  // from orchestration_public_key_file
    bool operator==(const Settings&) const = default;
  };

  void OnRequest(std::string_view type) override;
  void OnDrop(std::string_view reason) override;
  void OnPlanRefused(std::string_view reason) override;
  void OnPlanBytes(std::uint64_t bytes) override;

  // The plan peers' addresses (SocketAddress::ToString), read on the
  // responder's thread, written by SetPlanPeers.
  struct PlanPeers {
    std::mutex mutex;
    std::vector<PeerSpec> members;  // what `addresses` were resolved from
    std::set<std::string> addresses;
    // The members' addresses with port 0, and this responder's own ports: a
    // plan may name a member on any of the fleet's ports (vnetperf's second
    // and third, `hostperf net --ports`), not only on the one in its entry.
    std::set<std::string> hosts;
    std::vector<std::uint16_t> own_ports;
    bool Contains(const SocketAddress& address);
  };
  // The options to start a responder with `wanted`.
  ResponderOptions OptionsFor(const NetProbeConfig& net, const Settings& wanted);
  // Stops the running responder (it may hold the ports) and starts one with
  // `options` (IPv4 only when "::" cannot be bound).
  void Restart(ResponderOptions options, Settings wanted);
  void SetError(std::string error);

  ResponderMetrics& metrics_;
  RouteLookup route_;
  SystemRoots roots_;
  std::mutex services_mutex_;  // serialises Apply (start-up, reload, retry)
  std::mutex state_mutex_;     // guards what follows
  Settings settings_;          // what responder_ was started with
  std::string error_;          // why the last start failed; empty once running
  Secret secret_;
  std::vector<std::uint16_t> ports_;
  std::shared_ptr<PlanPeers> plan_peers_ = std::make_shared<PlanPeers>();
  std::unique_ptr<Responder> responder_;  // last: stopped first
};

}  // namespace hostperf::probes::net
