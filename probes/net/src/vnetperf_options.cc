// A full run's options (net_probe.h): the run API's JSON, the CLI's flags
// once ParseNetCommand made them JSON.
#include <algorithm>
#include <utility>

#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/net/peers.h"

namespace hostperf::probes::net {

using nlohmann::json;

const std::vector<std::string>& FullRunTests() {
  static const std::vector<std::string> kTests = {"latency", "tcp-throughput", "udp-throughput", "connections"};
  return kTests;
}

Result<NetOptions> ParseNetOptions(const json& options, std::optional<std::chrono::nanoseconds> duration) {
  using R = Result<NetOptions>;
  if (!options.is_null() && !options.is_object()) return R::Error("options must be a JSON object");
  NetOptions out;
  if (duration) out.duration = *duration;  // the run's length, unless the options set their own
  static const json kNone = json::object();
  for (const auto& [key, value] : (options.is_null() ? kNone : options).items()) {
    if (key == "tests") {
      if (!value.is_array()) return R::Error("tests: expected a list");
      for (const auto& test : value) {
        if (!test.is_string() ||
            std::find(FullRunTests().begin(), FullRunTests().end(), test.get<std::string>()) == FullRunTests().end()) {
          return R::Error("tests: unknown test " + test.dump() +
                          " (known: latency, tcp-throughput, udp-throughput, connections)");
        }
        out.tests.push_back(test.get<std::string>());
      }
    } else if (key == "datarate") {
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 100000) {
        return R::Error("datarate: expected MB/s between 0 and 100000");
      }
      out.datarate = value.get<double>();
    } else if (key == "duration") {
      auto parsed = ParseDurationOption(value);
      if (!parsed) return R::Error("duration: " + parsed.error());
      out.duration = *parsed;
    } else if (key == "hosts") {
      if (!value.is_array() || value.empty()) return R::Error("hosts: expected a non-empty list of host names");
      std::vector<std::string> hosts;
      for (const auto& host : value) {
        if (!host.is_string()) return R::Error("hosts: expected strings");
        if (auto spec = ParsePeerSpec(host.get<std::string>(), 14159); !spec) return R::Error("hosts: " + spec.error());
        hosts.push_back(host.get<std::string>());
      }
      out.hosts = std::move(hosts);
    } else if (key == "ignore_bad_hosts") {
      if (!value.is_boolean()) return R::Error("ignore_bad_hosts: expected true or false");
      out.ignore_bad_hosts = value.get<bool>();
    } else if (key == "ports") {
      if (!value.is_array() || value.empty()) return R::Error("ports: expected a non-empty list");
      std::vector<std::uint16_t> ports;
      for (const auto& port : value) {
        if (!port.is_number_integer() || port.get<std::int64_t>() < 1 || port.get<std::int64_t>() > 65535) {
          return R::Error("ports: expected port numbers 1 to 65535");
        }
        ports.push_back(port.get<std::uint16_t>());
      }
      out.ports = std::move(ports);
    } else if (key == "max_connections") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1 || value.get<std::int64_t>() > 65535) {
        return R::Error("max_connections: expected a number of connections, 1 to 65535");
      }
      out.max_connections = value.get<std::uint32_t>();
    } else {
      return R::Error("unknown option \"" + key + "\"");
    }
  }
  if (out.duration <= std::chrono::nanoseconds::zero() || out.duration > kMaxTestDuration) {
    return R::Error("duration: expected seconds, greater than 0 and at most 60");
  }
  return out;
}

Result<std::shared_ptr<const ProbeOptions>> ParseNetModuleOptions(const json& options,
                                                                  std::optional<std::chrono::nanoseconds> duration) {
  return ShareOptions(ParseNetOptions(options, duration));
}

}  // namespace hostperf::probes::net
