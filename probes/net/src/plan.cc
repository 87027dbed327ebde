#include "hostperf/probes/net/plan.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "control.h"

namespace hostperf::probes::net {

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t RandomPlanId() {
  std::random_device device;
  const std::uint64_t id = (static_cast<std::uint64_t>(device()) << 32) | device();
  return id == 0 ? 1 : id;
}

// A datagram size the sender can use whatever the plan says.
std::size_t DatagramSize(std::uint32_t planned) {
  return planned == 0 ? 8192 : std::clamp<std::size_t>(planned, kUdpDataHeader, 65000);
}

}  // namespace

PlanPeer ToPlanPeer(const SocketAddress& address) {
  PlanPeer peer;
  peer.port = address.port();
  if (address.family() == AF_INET6) {
    peer.family = 6;
    std::memcpy(peer.address.data(), &reinterpret_cast<const sockaddr_in6*>(&address.storage)->sin6_addr, 16);
  } else {
    peer.family = 4;
    std::memcpy(peer.address.data(), &reinterpret_cast<const sockaddr_in*>(&address.storage)->sin_addr, 4);
  }
  return peer;
}

SocketAddress FromPlanPeer(const PlanPeer& peer) {
  SocketAddress address;
  if (peer.family == 6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
    v6->sin6_family = AF_INET6;
    std::memcpy(&v6->sin6_addr, peer.address.data(), 16);
    address.length = sizeof(sockaddr_in6);
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
    v4->sin_family = AF_INET;
    std::memcpy(&v4->sin_addr, peer.address.data(), 4);
    address.length = sizeof(sockaddr_in);
  }
  address.set_port(peer.port);
  return address;
}

PlanReport SendToPlanPeers(const Plan& plan, std::span<const PlanPeer> peers, const Secret& secret,
                           const std::function<bool()>& should_stop, const RealtimeClock& realtime) {
  PlanReport report;
  if (peers.empty()) return report;
  ThroughputOptions options;
  options.test = plan.test;
  options.duration = std::chrono::milliseconds(plan.duration_ms);
  options.rate_bytes_per_second = plan.rate_bytes_per_second / peers.size();
  if (plan.rate_bytes_per_second > 0 && options.rate_bytes_per_second == 0) options.rate_bytes_per_second = 1;
  options.datagram_size = DatagramSize(plan.datagram_size);
  options.plan_id = plan.id;
  // Bounded so that the report makes the responder's deadline (responder.cc,
  // kPlanReportGrace) even when a peer goes silent.
  options.results_timeout = std::chrono::seconds(2);
  // All of a round's sessions connect in the same instant, each host's to
  // as many peers as the fan-out: a loaded host may take more than the pair
  // sessions' 2 s to answer them all. 3 + the results' 2 s still end
  // within kPlanReportGrace (6 s) after the duration.
  options.connect_timeout = std::chrono::seconds(3);
  // One sender per peer, all at once (a blocking session each, as iperf3
  // runs one thread per stream): the plan's peer count is bounded by the
  // responder's connection limit.
  std::vector<ThroughputResult> results(peers.size());
  std::vector<std::thread> senders;
  senders.reserve(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) {
    senders.emplace_back(
        [&, i] { results[i] = RunThroughput(FromPlanPeer(peers[i]), options, secret, should_stop, realtime); });
  }
  for (std::thread& sender : senders) sender.join();
  double longest = 0;
  for (const ThroughputResult& r : results) {
    report.bytes_sent += r.bytes_sent;
    report.packets_sent += r.packets_sent;
    longest = std::max(longest, r.sent_seconds);
    if (r.outcome == SessionOutcome::kOk) {
      ++report.sessions_ok;
    } else {
      ++report.sessions_failed;
    }
  }
  report.sent_ns = static_cast<std::int64_t>(longest * 1e9);
  return report;
}

namespace {

// One host's part of a coordinated run, on the coordinator's side.
struct Member {
  const PeerTarget* target = nullptr;
  Control control;
  bool in_plan = false;            // accepted this round's plan
  bool done = false;               // final result known
  std::int64_t jitter_sum_ns = 0;  // over the rounds that measured jitter
  std::size_t jitter_rounds = 0;
  AllToAllHostResult result;
};

// A plan of `options` without its id and peers.
Plan BasePlan(const AllToAllOptions& options) {
  Plan plan;
  plan.test = options.test;
  plan.duration_ms = static_cast<std::uint32_t>(
      std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(options.duration).count()));
  plan.rate_bytes_per_second = options.rate_bytes_per_second;
  plan.datagram_size = static_cast<std::uint32_t>(options.datagram_size);
  return plan;
}

// Why a host did not take a round's plan.
struct Refusal {
  Member* member = nullptr;
  std::string error;
  bool denied = false;  // kDenied: beyond a limit of its own (maybe the fan-out)
};

// Sends a plan (kPlan, then the peers in kPlanPeers messages) and reads the
// answer: "" when accepted, else why not.
std::string OfferPlan(Member& member, const Plan& plan, std::span<const PlanPeer> peers, const Secret& secret,
                      const OrchestrationKey* key, Clock::time_point deadline, bool* denied) {
  const int fd = member.control.fd.get();
  Message message;
  message.type = MessageType::kPlan;
  message.session = RandomSessionId();
  message.plan = plan;
  if (member.control.peer_revision >= kOrchestratedRevision) {
    if (key == nullptr) {
      return "not offered a plan: this coordinator holds no orchestration key (probes.net.orchestration_key_file), "
             "and the host takes only plans signed by one";
    }
    message.plan.signature = key->Sign(PlanSigningBytes(member.control.binding, plan, peers));
  }
  if (!SendMessage(fd, message, secret, deadline, member.control.NextSent())) return "plan: send failed";
  for (std::size_t first = 0; first < peers.size(); first += kPlanPeersPerMessage) {
    Message batch;
    batch.type = MessageType::kPlanPeers;
    batch.session = message.session;
    const auto part = peers.subspan(first, std::min(kPlanPeersPerMessage, peers.size() - first));
    batch.peers.assign(part.begin(), part.end());
    if (!SendMessage(fd, batch, secret, deadline, member.control.NextSent())) return "plan: send failed";
  }
  const auto reply = ReceiveMessage(fd, secret, deadline, member.control.NextReceived());
  if (!reply) return "no answer to the plan (the host closed the connection or is overloaded)";
  switch (reply->type) {
    case MessageType::kAccept:
      return reply->accept.token == plan.id ? "" : "the plan was answered for another plan";
    case MessageType::kBusy:
      return "busy with another throughput test";
    case MessageType::kDenied:
      *denied = true;
      return "denied the plan: not signed by the orchestration key it trusts "
             "(its probes.net.orchestration_public_key_file), or beyond the limits its own configuration sets (a "
             "rate of 0 or above probes.net.plan_max_rate, a duration above probes.net.plan_max_duration, more "
             "peers than probes.net.plan_max_sessions or net.max_connections allow, or a peer outside its peer set)";
    default:
      return "answered the plan with " + std::string(ToString(reply->type));
  }
}

// Go: the plan starts on the host. False when the connection is lost.
bool SendPlanGo(Member& member, const Secret& secret, Clock::time_point deadline) {
  Message go;
  go.type = MessageType::kPlanGo;
  go.session = RandomSessionId();
  return SendMessage(member.control.fd.get(), go, secret, deadline, member.control.NextSent());
}

// The host's control connection is readable: its report, or (empty
// optional) why not in *error.
std::optional<PlanReport> ReceivePlanReport(Member& member, const Secret& secret, Clock::time_point deadline,
                                            std::string* error) {
  const auto message = ReceiveMessage(member.control.fd.get(), secret, deadline, member.control.NextReceived());
  if (message && message->type == MessageType::kPlanReport) return message->report;
  *error = message ? "answered with " + std::string(ToString(message->type)) + " instead of its report"
                   : "lost the connection mid-test (the host or its hostperf stopped)";
  return std::nullopt;
}

// One run of RunAllToAll, in its phases: connect, then per round of the
// schedule agree on a plan, go and collect the reports.
class AllToAllRun {
 public:
  AllToAllRun(std::span<const PeerTarget> hosts, const AllToAllOptions& options, const Secret& secret,
              const std::function<bool()>& should_stop, const std::function<void(const AllToAllHostResult&)>& on_host)
      : hosts_(hosts),
        options_(options),
        secret_(secret),
        should_stop_(should_stop),
        on_host_(on_host),
        members_(hosts.size()) {}

  std::vector<AllToAllHostResult> Run() {
    OpenAll();
    fan_out_ = InitialFanOut();
    RunRounds();
    for (Member& member : members_) {
      if (member.done) continue;
      if (should_stop_()) {
        Finish(member, "stopped");
      } else {
        Finish(member, member.result.rounds > 0 ? "" : "no other host left to test with");
      }
    }
    std::vector<AllToAllHostResult> results;
    for (Member& member : members_) results.push_back(member.result);
    return results;
  }

 private:
  void Finish(Member& member, std::string error) {
    member.done = true;
    member.in_plan = false;
    member.result.ok = error.empty();
    member.result.error = std::move(error);
    member.control.fd.Reset();  // a plan still running there is cancelled
    if (on_host_) on_host_(member.result);
  }

  std::vector<Member*> Live() {
    std::vector<Member*> live;
    for (Member& member : members_) {
      if (!member.done) live.push_back(&member);
    }
    return live;
  }

  // Control connections to every host, in parallel (a dead host costs one
  // connect timeout, not one per host).
  void OpenAll() {
    std::vector<std::thread> openers;
    std::vector<Result<Control>> opened;
    opened.reserve(hosts_.size());
    for (std::size_t i = 0; i < hosts_.size(); ++i) opened.emplace_back(Failure{"unreachable", "not tried"});
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      members_[i].target = &hosts_[i];
      members_[i].result.name = hosts_[i].name;
      openers.emplace_back([&, i] {
        opened[i] =
            OpenControl(hosts_[i].address, hosts_[i].SecretOr(secret_), Clock::now() + options_.connect_timeout);
      });
    }
    for (std::thread& opener : openers) opener.join();
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      if (!opened[i]) {
        Finish(members_[i], opened[i].error());
      } else if (opened[i]->peer_revision < kPlanRevision) {
        Finish(members_[i], "runs an older hostperf (protocol revision " + std::to_string(opened[i]->peer_revision) +
                                "): upgrade it to test throughput among all hosts");
      } else if (opened[i]->peer_max_connections == 1) {
        Finish(members_[i],
               "holds 1 connection at once (its probes.net.max_connections, or hostperf-peer --max-connections): "
               "no room for a peer's session beside the coordinator's");
      } else {
        members_[i].control = std::move(opened[i]).value();
      }
    }
  }

  // The fan-out asked for, within every host's advertised connection limit:
  // the coordinator's connection, this round's sessions and as many again
  // for the previous round's, which may still be closing.
  std::size_t InitialFanOut() const {
    std::size_t fan_out = std::clamp<std::size_t>(options_.max_peers_per_round, 1, 65535);
    for (const Member& member : members_) {
      if (!member.done && member.control.peer_max_connections > 1) {
        fan_out =
            std::min<std::size_t>(fan_out, std::max<std::size_t>(1, (member.control.peer_max_connections - 1) / 2));
      }
    }
    return fan_out;
  }

  // The schedule (AllToAllSchedule) on the ring of the hosts still in the
  // run. A host that refuses a round or fails in it leaves the ring and the
  // rest go on from the same offset: the per-host totals stay balanced
  // among the hosts that took part in every round.
  void RunRounds() {
    std::size_t next_offset = 1;
    std::size_t round = 0;
    while (!should_stop_()) {
      const std::vector<Member*> live = Live();
      if (live.size() < 2 || next_offset >= live.size()) break;
      const std::size_t left = live.size() - next_offset;  // offsets still to run
      const std::size_t peers = std::min(fan_out_, left);
      if (options_.on_round) options_.on_round(round + 1, round + (left + fan_out_ - 1) / fan_out_, live.size());
      if (!Agree(live, next_offset, peers)) continue;  // hosts left out or the fan-out lowered: again
      CollectReports(Go(), round + 1);
      next_offset += peers;
      ++round;
    }
  }

  // Offers the round's plan to every live host: host j its `peers` peers
  // from offset `first`. True when all took it; otherwise the refusers are
  // left out (or, for denials, the fan-out halved) and the plan withdrawn.
  bool Agree(const std::vector<Member*>& live, std::size_t first, std::size_t peers) {
    Plan plan = BasePlan(options_);
    plan.id = RandomPlanId();
    plan.peer_count = static_cast<std::uint16_t>(peers);
    // The offers in parallel (as OpenAll): a slow host costs its own
    // deadline, not every later host's, and the first hosts to accept are
    // not left waiting past their kPlanGo timeout.
    std::vector<std::string> errors(live.size());
    std::vector<char> denials(live.size(), 0);
    {
      std::vector<std::thread> offers;
      offers.reserve(live.size());
      for (std::size_t j = 0; j < live.size(); ++j) {
        offers.emplace_back([&, j] {
          std::vector<PlanPeer> to;
          for (std::size_t k = 0; k < peers; ++k) {
            to.push_back(ToPlanPeer(live[(j + first + k) % live.size()]->target->address));
          }
          bool denied = false;
          errors[j] = OfferPlan(*live[j], plan, to, SecretOf(*live[j]), options_.orchestration_key,
                                Clock::now() + options_.connect_timeout, &denied);
          denials[j] = denied ? 1 : 0;
        });
      }
      for (std::thread& offer : offers) offer.join();
    }
    std::vector<Refusal> refusals;
    for (std::size_t j = 0; j < live.size(); ++j) {
      if (errors[j].empty()) {
        live[j]->in_plan = true;
      } else {
        refusals.push_back({live[j], std::move(errors[j]), denials[j] != 0});
      }
    }
    if (refusals.empty()) {
      fan_out_before_denials_ = 0;  // the fan-out now taken is the one to keep
      return true;
    }
    const bool any_denied = std::any_of(refusals.begin(), refusals.end(), [](const Refusal& r) { return r.denied; });
    const bool lower_fan_out = peers > 1 && any_denied;
    for (Refusal& refusal : refusals) {
      if (refusal.denied && lower_fan_out) {
        refusal.member->control.fd.Reset();  // reopened below, with the others
        continue;
      }
      Finish(*refusal.member, std::move(refusal.error));
    }
    if (lower_fan_out) {
      if (fan_out_before_denials_ == 0) fan_out_before_denials_ = fan_out_;
      fan_out_ = std::max<std::size_t>(1, peers / 2);
    } else if (any_denied && fan_out_before_denials_ > 0) {
      // Denied even one peer: its own limits (rate, duration, peer set, the
      // key), not the fan-out. The others go back to the fan-out they had.
      fan_out_ = fan_out_before_denials_;
      fan_out_before_denials_ = 0;
    }
    Withdraw(live);
    return false;
  }

  // Withdraws the plan from those that took it (closing a connection
  // cancels the plan there) and reconnects every host still in the run.
  void Withdraw(const std::vector<Member*>& live) {
    for (Member* member : live) {
      if (member->done) continue;
      member->in_plan = false;
      member->control.fd.Reset();
      auto reopened = OpenControl(member->target->address, SecretOf(*member), Clock::now() + options_.connect_timeout);
      if (!reopened) {
        Finish(*member, reopened.error());
      } else {
        member->control = std::move(reopened).value();
      }
    }
  }

  // Go: back to back, so that the hosts start within a round trip of each
  // other. The hosts now running, by control connection.
  std::map<int, Member*> Go() {
    std::map<int, Member*> running;
    for (Member& member : members_) {
      if (!member.in_plan) continue;
      if (!SendPlanGo(member, SecretOf(member), Clock::now() + options_.connect_timeout)) {
        Finish(member, "lost the connection before the test started");
        continue;
      }
      running.emplace(member.control.fd.get(), &member);
    }
    return running;
  }

  // Reports: each host sends one when its sends are done and its peers'
  // sessions have ended. A host that closes the connection (it died or was
  // stopped) is reported at once; one that stays silent, at the deadline.
  void CollectReports(std::map<int, Member*> running, std::size_t round) {
    const auto waited = options_.connect_timeout + options_.duration + options_.report_grace;
    const auto deadline = Clock::now() + waited;
    std::vector<pollfd> fds;
    while (!running.empty()) {
      if (should_stop_()) {
        for (auto& [fd, member] : running) Finish(*member, "stopped");
        break;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(waited);
        for (auto& [fd, member] : running) {
          Finish(*member, InRound(round, "no report within " + std::to_string(seconds.count()) +
                                             " s of the start: the host stopped answering mid-test"));
        }
        break;
      }
      fds.clear();
      for (const auto& [fd, member] : running) fds.push_back({fd, POLLIN, 0});
      const auto wait = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(200));
      if (::poll(fds.data(), fds.size(),
                 static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count())) <= 0) {
        continue;
      }
      for (const pollfd& p : fds) {
        if (p.revents == 0) continue;
        ReadReport(*running.at(p.fd), round);
        running.erase(p.fd);
      }
    }
  }

  std::string InRound(std::size_t round, const std::string& error) const {
    return round > 1 ? "in round " + std::to_string(round) + ": " + error : error;
  }

  // The host's control connection is readable: its report, or why not.
  void ReadReport(Member& member, std::size_t round) {
    std::string error;
    if (const auto report =
            ReceivePlanReport(member, SecretOf(member), Clock::now() + options_.connect_timeout, &error)) {
      member.in_plan = false;
      Accumulate(member, *report);
    } else {
      Finish(member, InRound(round, error));
    }
  }

  // A round's report added to the host's totals: bytes, packets, sessions
  // and times add up; jitter is the mean over the rounds that measured it.
  static void Accumulate(Member& member, const PlanReport& round) {
    PlanReport& total = member.result.report;
    total.bytes_sent += round.bytes_sent;
    total.bytes_received += round.bytes_received;
    total.sent_ns += round.sent_ns;
    total.received_ns += round.received_ns;
    total.packets_sent += round.packets_sent;
    total.packets_received += round.packets_received;
    total.packets_lost += round.packets_lost;
    total.sessions_ok = static_cast<std::uint16_t>(total.sessions_ok + round.sessions_ok);
    total.sessions_failed = static_cast<std::uint16_t>(total.sessions_failed + round.sessions_failed);
    total.peers_received = static_cast<std::uint16_t>(total.peers_received + round.peers_received);
    if (round.jitter_ns > 0) {
      member.jitter_sum_ns += round.jitter_ns;
      ++member.jitter_rounds;
      total.jitter_ns = member.jitter_sum_ns / static_cast<std::int64_t>(member.jitter_rounds);
    }
    ++member.result.rounds;
  }

  // The secret of a host's control connection: its own, or the shared one.
  const Secret& SecretOf(const Member& member) const { return member.target->SecretOr(secret_); }

  std::span<const PeerTarget> hosts_;
  const AllToAllOptions& options_;
  const Secret& secret_;
  const std::function<bool()>& should_stop_;
  const std::function<void(const AllToAllHostResult&)>& on_host_;
  std::vector<Member> members_;
  std::size_t fan_out_ = 1;
  // The fan-out before denials halved it (0: not halved): a host that denies
  // even one peer is left out and the others return to it.
  std::size_t fan_out_before_denials_ = 0;
};

}  // namespace

std::vector<AllToAllRound> AllToAllSchedule(std::size_t hosts, std::size_t fan_out) {
  std::vector<AllToAllRound> rounds;
  if (hosts < 2 || fan_out == 0) return rounds;
  for (std::size_t offset = 1; offset < hosts; offset += fan_out)
    rounds.push_back({offset, std::min(fan_out, hosts - offset)});
  return rounds;
}

std::vector<AllToAllHostResult> RunAllToAll(std::span<const PeerTarget> hosts, const AllToAllOptions& options,
                                            const Secret& secret, const std::function<bool()>& should_stop,
                                            const std::function<void(const AllToAllHostResult&)>& on_host) {
  return AllToAllRun(hosts, options, secret, should_stop, on_host).Run();
}

std::vector<PlanLinkResult> RunPlanLinks(std::span<const PeerTarget> hosts,
                                         std::span<const std::pair<std::size_t, std::size_t>> links,
                                         const AllToAllOptions& options, const Secret& secret,
                                         const std::function<bool()>& should_stop) {
  std::vector<PlanLinkResult> results(links.size());
  const auto fail_all = [&](const std::string& error) {
    for (PlanLinkResult& result : results) result.error = error;
    return results;
  };
  // The hosts taking part: each sends on one link and receives on one (a
  // responder takes as many plan sessions as its plan has peers).
  std::vector<std::size_t> sends(hosts.size()), receives(hosts.size());
  for (const auto& [from, to] : links) {
    if (from >= hosts.size() || to >= hosts.size() || from == to) return fail_all("not a link between two hosts");
    ++sends[from];
    ++receives[to];
  }
  std::vector<Member> members;
  std::map<std::size_t, std::size_t> member_of;  // host -> index in members
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (sends[h] == 0 && receives[h] == 0) continue;
    if (sends[h] != 1 || receives[h] != 1) {
      return fail_all("each host of a planned round sends on one link and receives on one; " + hosts[h].name +
                      " sends on " + std::to_string(sends[h]) + " and receives on " + std::to_string(receives[h]));
    }
    member_of[h] = members.size();
    members.emplace_back();
    members.back().target = &hosts[h];
  }
  Plan plan = BasePlan(options);
  plan.id = RandomPlanId();
  plan.peer_count = 1;
  // Connect and offer in parallel (as RunAllToAll): each host its own peer.
  std::vector<std::string> errors(members.size());
  {
    std::vector<std::thread> offers;
    for (std::size_t l = 0; l < links.size(); ++l) {
      offers.emplace_back([&, l] {
        Member& member = members[member_of.at(links[l].first)];
        const Secret& own = member.target->SecretOr(secret);
        auto opened = OpenControl(member.target->address, own, Clock::now() + options.connect_timeout);
        std::string& error = errors[member_of.at(links[l].first)];
        if (!opened) {
          error = opened.error();
          return;
        }
        member.control = std::move(opened).value();
        if (member.control.peer_revision < kPlanRevision) {
          error = "runs an older hostperf (protocol revision " + std::to_string(member.control.peer_revision) +
                  "): upgrade it to test throughput between hosts";
          return;
        }
        const PlanPeer peer = ToPlanPeer(hosts[links[l].second].address);
        bool denied = false;
        error = OfferPlan(member, plan, {&peer, 1}, own, options.orchestration_key,
                          Clock::now() + options.connect_timeout, &denied);
      });
    }
    for (std::thread& offer : offers) offer.join();
  }
  for (std::size_t m = 0; m < members.size(); ++m) {
    // A host that did not take the plan leaves its peers nothing to measure:
    // the others' plans are withdrawn as their connections close.
    if (!errors[m].empty()) return fail_all(members[m].target->name + ": " + errors[m]);
  }
  if (should_stop()) return fail_all("stopped");
  for (Member& member : members) {
    if (!SendPlanGo(member, member.target->SecretOr(secret), Clock::now() + options.connect_timeout)) {
      return fail_all(member.target->name + ": lost the connection before the test started");
    }
  }
  // Each host's report, as RunAllToAll's CollectReports.
  std::vector<std::optional<PlanReport>> reports(members.size());
  std::vector<std::string> lost(members.size());
  const auto deadline = Clock::now() + options.connect_timeout + options.duration + options.report_grace;
  std::size_t waiting = members.size();
  while (waiting > 0) {
    if (should_stop()) return fail_all("stopped");
    const auto now = Clock::now();
    if (now >= deadline) break;
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t m = 0; m < members.size(); ++m) {
      if (reports[m] || !lost[m].empty()) continue;
      fds.push_back({members[m].control.fd.get(), POLLIN, 0});
      which.push_back(m);
    }
    const auto wait = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(200));
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count())) <=
        0) {
      continue;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Member& member = members[which[i]];
      reports[which[i]] = ReceivePlanReport(member, member.target->SecretOr(secret),
                                            Clock::now() + options.connect_timeout, &lost[which[i]]);
      --waiting;
    }
  }
  for (std::size_t l = 0; l < links.size(); ++l) {
    const std::size_t m = member_of.at(links[l].first);
    PlanLinkResult& result = results[l];
    if (!reports[m]) {
      result.error = !lost[m].empty() ? lost[m] : "no report in time: the host stopped answering mid-test";
      continue;
    }
    result.report = *reports[m];
    if (result.report.sessions_ok == 0 || result.report.bytes_sent == 0 || result.report.sent_ns <= 0) {
      result.error = "its session to " + hosts[links[l].second].name +
                     " did not run (the receiver refused it or did "
                     "not answer)";
      continue;
    }
    result.ok = true;
  }
  return results;
}

}  // namespace hostperf::probes::net
