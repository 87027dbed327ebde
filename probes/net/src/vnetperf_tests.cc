// The tests of a full run: vnetperf's latency table, throughput ladders
// (pair sessions with one host, all hosts at once with more) and
// connections table.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "burst_attribution.h"
#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/plan.h"
#include "hostperf/probes/stats.h"
#include "result_rows.h"
#include "vnetperf_rows.h"
#include "vnetperf_run.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;

// MB/s of the ladder (vnetperf's) when no --datarate is given.
const std::vector<double> kLadder = {32, 64, 128, 256, 512, 640, 768, 1024, 2048};
// The latency test paces its pings over --duration, one every 2 ms (500 in
// vnetperf's default second), between 20 and 6000 pings (so further apart
// beyond 12 s). bench/net compares the RTT with sockperf at this pace.
constexpr auto kFullPingSpacing = std::chrono::milliseconds(2);
constexpr std::uint32_t kFullMinPings = 20;
constexpr std::uint32_t kFullMaxPings = 6000;

}  // namespace

// The rates of this run's throughput tests: the ladder, or the one --datarate.
std::vector<double> VnetperfRun::Rates() const {
  return options_.datarate > 0 ? std::vector<double>{options_.datarate} : kLadder;
}

// vnetperf's latency table: UDP ping-pong with every host at once.
json VnetperfRun::LatencyTable(const Hosts& hosts) {
  std::vector<PeerTarget> targets;
  std::vector<std::vector<WatchedDevice>> paths;
  std::vector<WatchedDevice> watched;
  std::set<std::string> watched_names;
  for (const auto& [name, address] : hosts) {
    targets.push_back(TargetOf(name, address));
    paths.push_back(DevicesToward(interfaces_, address));
    for (const WatchedDevice& device : paths.back()) {
      if (watched_names.insert(device.name).second) watched.push_back(device);
    }
  }
  const Burst burst(roots_, watched);
  LatencyOptions latency;
  latency.packets = static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(options_.duration / kFullPingSpacing, kFullMinPings, kFullMaxPings));
  latency.interval = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.duration) / latency.packets;
  latency.reply_timeout = net_.reply_timeout;
  const auto measured = MeasureLatency(targets, latency, secret_, [&] { return ctx_.ShouldStop(); });
  const CounterDeltas deltas = burst.End(/*tcp=*/false);
  const std::string date = VnetperfDate();
  json rows = json::array();
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    const auto& r = measured[i];
    json row = {{"date", date},
                {"node", hosts[i].first},
                {"index", i},
                {"rtt_latency_us", Median(r.rtt_seconds) * 1e6},
                {"rtt_p99_us", Percentile(r.rtt_seconds, 0.99) * 1e6},
                {"clock_skew_us", r.clock_offset_seconds.value_or(0) * 1e6},
                {"sent", r.sent},
                {"lost", r.lost()},
                {"interface", paths[i].empty() ? json(nullptr) : json(paths[i].front().name)}};
    if (r.lost() > 0 && r.sent > 0) {
      row["attribution"] =
          Attribute(fmt::format("ping loss {:.1f}%", 100.0 * r.lost() / r.sent), hosts[i].first, paths[i], deltas);
      findings_.push_back(row["attribution"]);
    }
    Report("latency", row);
    rows.push_back(std::move(row));
  }
  return rows;
}

// One throughput test over the rate ladder (or the one --datarate): per
// rate, every host sends to all the others and receives from them at once
// (vnetperf's test among hosts), then their average. With one host, or
// without an orchestration key to direct them, a session from this host to
// each.
json VnetperfRun::ThroughputLadder(const Hosts& hosts, const std::string& test) {
  if (hosts.size() >= 2 && orchestration_key_) return AllToAllLadder(hosts, test);
  if (hosts.size() >= 2) {
    const std::string finding =
        "throughput measured from this host to each host, not among all hosts at once: this host holds no "
        "orchestration key (probes.net.orchestration_key_file; the hosts trust its public key with "
        "probes.net.orchestration_public_key_file)";
    if (std::find(findings_.begin(), findings_.end(), finding) == findings_.end()) findings_.push_back(finding);
  }
  const auto stop = [&] { return ctx_.ShouldStop(); };
  json rows = json::array();
  for (const double rate : Rates()) {
    if (ctx_.ShouldStop()) break;
    const std::string date = VnetperfDate();
    json per_rate = json::array();
    for (const auto& [name, address] : hosts) {
      if (ctx_.ShouldStop()) break;
      Progress(fmt::format("{} at {} MB/s with {}", test, rate, name), true);
      ThroughputOptions throughput;
      throughput.test = test == "tcp-throughput" ? ThroughputTest::kTcp : ThroughputTest::kUdp;
      throughput.duration = options_.duration;
      throughput.rate_bytes_per_second = static_cast<std::uint64_t>(rate * kMiB);
      throughput.datagram_size = net_.udp_datagram_size;
      const Burst burst(roots_, DevicesToward(interfaces_, address));
      const ThroughputResult r = RunThroughput(address, throughput, SecretFor(name), stop);
      spdlog::debug("net: {} at {} MB/s with {}: {}, {} B sent", test, rate, name, ToString(r.outcome), r.bytes_sent);
      if (r.outcome != SessionOutcome::kOk && r.outcome != SessionOutcome::kStopped) {
        NoteUnmeasured(name, test, r.error.empty() ? std::string(ToString(r.outcome)) : r.error);
      }
      const CounterDeltas deltas = burst.End(throughput.test == ThroughputTest::kTcp);
      json row = PairThroughputRow(date, test, rate, name, r);
      AttributeRow(r, throughput.test, rate * kMiB, interfaces_, burst.devices(), deltas, row, findings_);
      Report(test, row);
      per_rate.push_back(std::move(row));
    }
    for (const auto& row : per_rate) rows.push_back(row);
    rows.push_back(AverageRow(per_rate, date, test, rate));
    Report(test, rows.back());
  }
  return rows;
}

// The ladder among all hosts at once, coordinated through their
// responders (plan.h); a host that fails is reported, the others go on.
json VnetperfRun::AllToAllLadder(const Hosts& hosts, const std::string& test) {
  std::vector<PeerTarget> targets;
  for (const auto& [name, address] : hosts) targets.push_back(TargetOf(name, address));
  json rows = json::array();
  for (const double rate : Rates()) {
    if (ctx_.ShouldStop()) break;
    AllToAllOptions plan;
    plan.on_round = [&](std::size_t round, std::size_t rounds, std::size_t in_round) {
      Progress(fmt::format("{} at {} MB/s among {} hosts, round {} of {}", test, rate, in_round, round, rounds), true);
    };
    plan.test = test == "tcp-throughput" ? ThroughputTest::kTcp : ThroughputTest::kUdp;
    plan.duration = options_.duration;
    plan.rate_bytes_per_second = static_cast<std::uint64_t>(rate * kMiB);
    plan.datagram_size = net_.udp_datagram_size;
    plan.orchestration_key = orchestration_key_.get();
    const std::string date = VnetperfDate();
    // Each host's row printed as it reports; the table in the hosts' order.
    const auto results = RunAllToAll(
        targets, plan, secret_, [&] { return ctx_.ShouldStop(); },
        [&](const AllToAllHostResult& r) { Report(test, PlanRow(date, test, rate, r)); });
    for (std::string& finding : PlanShortfalls(results, test, rate)) findings_.push_back(std::move(finding));
    json ok_rows = json::array();
    for (const AllToAllHostResult& r : results) {
      if (!r.ok && r.error != "stopped") NoteUnmeasured(r.name, test, r.error);
      spdlog::debug("net: {} at {} MB/s: {} {}", test, rate, r.name,
                    r.ok ? fmt::format("sent {} B, received {} B", r.report.bytes_sent, r.report.bytes_received)
                         : "failed: " + r.error);
      rows.push_back(PlanRow(date, test, rate, r));
      if (r.ok) ok_rows.push_back(rows.back());
    }
    json average = AverageRow(ok_rows, date, test, rate);
    average["mode"] = "all-to-all";
    rows.push_back(std::move(average));
    Report(test, rows.back());
  }
  return rows;
}

// How many hello-confirmed connections each host holds at once.
json VnetperfRun::ConnectionTable(const Hosts& hosts) {
  json rows = json::array();
  const std::uint32_t target = options_.max_connections.value_or(net_.max_connections);
  for (const auto& [name, address] : hosts) {
    if (ctx_.ShouldStop()) break;
    const auto r = ConnectionTest(address, SecretFor(name), target, std::chrono::seconds(10));
    // "maximum": what was asked of this peer (our cap or its own lower
    // limit), so that a full row reads accepted == maximum.
    rows.push_back({{"date", VnetperfDate()},
                    {"node", name},
                    {"accepted", r.accepted},
                    {"maximum", r.tried},
                    {"peer_limit", r.peer_limit},
                    {"configured_maximum", target}});
    Report("connections", rows.back());
  }
  return rows;
}

}  // namespace hostperf::probes::net
