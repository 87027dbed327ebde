#include "hostperf/probes/net/interfaces.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

namespace hostperf::probes::net {

namespace {

namespace fs = std::filesystem;

// The first line of a small sysfs file, trailing whitespace removed; nullopt
// when unreadable (sysfs answers EINVAL for the speed of a down link).
std::optional<std::string> ReadLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

fs::path NetDir(const SystemRoots& roots) { return roots.sys / "class" / "net"; }

// Closes the netlink socket on every path.
struct SocketCloser {
  int fd;
  ~SocketCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<std::string> NetlinkRouteInterface(const std::string& given) {
  // A dual-stack socket names IPv4 clients ::ffff:a.b.c.d: route them as IPv4.
  const std::string address =
      given.starts_with("::ffff:") && given.find('.') != std::string::npos ? given.substr(7) : given;
  std::uint8_t bytes[16] = {};
  int family = AF_INET;
  std::size_t length = 4;
  if (::inet_pton(AF_INET, address.c_str(), bytes) != 1) {
    if (::inet_pton(AF_INET6, address.c_str(), bytes) != 1) {
      return Failure{"no_route", "not a numeric address: " + address};
    }
    family = AF_INET6;
    length = 16;
  }
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Failure{"no_route", std::string("netlink socket: ") + std::strerror(errno)};
  const SocketCloser closer{fd};
  timeval timeout{1, 0};  // the kernel answers at once; never hang a run on it
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));

  struct {
    nlmsghdr header;
    rtmsg route;
    char attributes[64];
  } request{};
  request.header.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  request.header.nlmsg_type = RTM_GETROUTE;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  request.route.rtm_family = static_cast<unsigned char>(family);
  request.route.rtm_dst_len = static_cast<unsigned char>(length * 8);
  auto* attribute =
      reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&request) + NLMSG_ALIGN(request.header.nlmsg_len));
  attribute->rta_type = RTA_DST;
  attribute->rta_len = static_cast<unsigned short>(RTA_LENGTH(length));
  std::memcpy(RTA_DATA(attribute), bytes, length);
  request.header.nlmsg_len = NLMSG_ALIGN(request.header.nlmsg_len) + RTA_ALIGN(attribute->rta_len);

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, &request, request.header.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    return Failure{"no_route", std::string("netlink request: ") + std::strerror(errno)};
  }
  alignas(nlmsghdr) char buffer[8192];
  const ssize_t received = ::recv(fd, buffer, sizeof(buffer), 0);
  if (received < 0) return Failure{"no_route", std::string("netlink answer: ") + std::strerror(errno)};
  int left = static_cast<int>(received);
  for (auto* header = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(header, left); header = NLMSG_NEXT(header, left)) {
    if (header->nlmsg_type == NLMSG_ERROR) {
      const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
      return Failure{"no_route", "no route to " + address + ": " + std::strerror(-error->error)};
    }
    if (header->nlmsg_type != RTM_NEWROUTE) continue;
    auto* route = static_cast<rtmsg*>(NLMSG_DATA(header));
    int attributes_left = static_cast<int>(RTM_PAYLOAD(header));
    for (auto* a = RTM_RTA(route); RTA_OK(a, attributes_left); a = RTA_NEXT(a, attributes_left)) {
      if (a->rta_type != RTA_OIF) continue;
      int index = 0;
      std::memcpy(&index, RTA_DATA(a), sizeof(index));
      char name[IF_NAMESIZE] = {};
      if (::if_indextoname(static_cast<unsigned>(index), name) == nullptr) break;
      return std::string(name);
    }
  }
  return Failure{"no_route", "no output interface in the route to " + address};
}

bool ValidInterfaceName(std::string_view name) {
  return !name.empty() && name.size() < IF_NAMESIZE && name != "." && name != ".." &&
         name.find_first_of("/ \t\n") == std::string_view::npos;
}

InterfaceInfo ReadInterfaceInfo(const SystemRoots& roots, const std::string& name) {
  InterfaceInfo info;
  info.name = name;
  if (!ValidInterfaceName(name)) return info;
  const fs::path dir = NetDir(roots) / name;
  if (const auto speed = ReadLine(dir / "speed")) {
    if (const auto mbps = ParseNumber<std::int64_t>(*speed); mbps && *mbps > 0) info.speed_mbps = *mbps;
  }
  if (const auto duplex = ReadLine(dir / "duplex"); duplex && (*duplex == "full" || *duplex == "half")) {
    info.duplex = *duplex;
  }
  if (const auto mtu = ReadLine(dir / "mtu")) info.mtu = ParseNumber<std::uint32_t>(*mtu);
  if (const auto state = ReadLine(dir / "operstate"); state && !state->empty()) info.operstate = *state;
  std::set<std::string> lowers;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string entry = it->path().filename().string();
    if (entry.starts_with("lower_") && ValidInterfaceName(entry.substr(6))) lowers.insert(entry.substr(6));
  }
  if (const auto slaves = ReadLine(dir / "bonding" / "slaves")) {
    std::istringstream words(*slaves);
    for (std::string slave; words >> slave;) {
      if (ValidInterfaceName(slave)) lowers.insert(slave);
    }
  }
  info.lowers.assign(lowers.begin(), lowers.end());
  return info;
}

InterfaceCache::InterfaceCache(SystemRoots roots, RouteLookup route)
    : roots_(std::move(roots)), route_(route ? std::move(route) : NetlinkRouteInterface) {}

const Result<std::string>& InterfaceCache::RouteTo(const std::string& address) {
  auto it = routes_.find(address);
  if (it == routes_.end()) {
    Result<std::string> route = route_(address);
    if (route && !ValidInterfaceName(*route)) route = Failure{"no_route", "bad interface name " + *route};
    it = routes_.emplace(address, std::move(route)).first;
  }
  return it->second;
}

const InterfaceInfo& InterfaceCache::Info(const std::string& name) {
  auto it = infos_.find(name);
  if (it == infos_.end()) it = infos_.emplace(name, ReadInterfaceInfo(roots_, name)).first;
  return it->second;
}

std::vector<WatchedDevice> InterfaceCache::Devices(const std::string& name) {
  std::vector<WatchedDevice> devices = {{name, ""}};
  std::set<std::string> seen = {name};
  // Breadth first, bounded: a VLAN on a bond on its members is three levels.
  std::size_t level_start = 0;
  for (int depth = 0; depth < kMaxDepth && level_start < devices.size(); ++depth) {
    const std::size_t level_end = devices.size();
    for (std::size_t i = level_start; i < level_end; ++i) {
      const std::string upper = devices[i].name;
      for (const std::string& lower : Info(upper).lowers) {
        if (seen.insert(lower).second) devices.push_back({lower, upper});
      }
    }
    level_start = level_end;
  }
  return devices;
}

const std::vector<std::string>& InterfaceErrorCounters() {
  static const std::vector<std::string> kCounters = {"rx_errors",         "tx_errors",     "rx_dropped",
                                                     "tx_dropped",        "rx_crc_errors", "rx_fifo_errors",
                                                     "tx_carrier_errors", "collisions"};
  return kCounters;
}

std::optional<std::uint64_t> ReadTcpRetransmits(const SystemRoots& roots) {
  // Two "Tcp:" lines: the field names, then their values.
  std::ifstream in(roots.proc / "net" / "snmp");
  std::string line;
  std::vector<std::string> names;
  while (std::getline(in, line)) {
    if (!line.starts_with("Tcp:")) continue;
    std::istringstream words(line.substr(4));
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (names.empty()) {
      names = std::move(fields);
      continue;
    }
    for (std::size_t i = 0; i < names.size() && i < fields.size(); ++i) {
      if (names[i] == "RetransSegs") return ParseNumber<std::uint64_t>(fields[i]);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

CounterSnapshot ReadCounters(const SystemRoots& roots, std::span<const std::string> devices) {
  CounterSnapshot snapshot;
  for (const std::string& device : devices) {
    if (!ValidInterfaceName(device)) continue;
    auto& counters = snapshot.devices[device];
    const fs::path dir = NetDir(roots) / device / "statistics";
    for (const std::string& counter : InterfaceErrorCounters()) {
      const auto text = ReadLine(dir / counter);
      if (!text) continue;
      if (const auto value = ParseNumber<std::uint64_t>(*text)) counters[counter] = *value;
    }
  }
  snapshot.tcp_retransmits = ReadTcpRetransmits(roots);
  return snapshot;
}

bool CounterDeltas::Moved(const std::string& device) const {
  const auto it = devices.find(device);
  if (it == devices.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(), [](const auto& c) { return c.second > 0; });
}

void CounterDeltas::Add(const CounterDeltas& other) {
  for (const auto& [device, counters] : other.devices) {
    for (const auto& [counter, delta] : counters) devices[device][counter] += delta;
  }
  if (other.tcp_retransmits) tcp_retransmits = tcp_retransmits.value_or(0) + *other.tcp_retransmits;
}

CounterDeltas Diff(const CounterSnapshot& before, const CounterSnapshot& after) {
  CounterDeltas deltas;
  for (const auto& [device, counters] : after.devices) {
    const auto old = before.devices.find(device);
    if (old == before.devices.end()) continue;
    for (const auto& [counter, value] : counters) {
      const auto was = old->second.find(counter);
      if (was == old->second.end()) continue;
      deltas.devices[device][counter] = value >= was->second ? value - was->second : 0;
    }
  }
  if (before.tcp_retransmits && after.tcp_retransmits) {
    deltas.tcp_retransmits =
        *after.tcp_retransmits >= *before.tcp_retransmits ? *after.tcp_retransmits - *before.tcp_retransmits : 0;
  }
  return deltas;
}

std::string Attribute(std::string_view shortfall, std::string_view peer, std::span<const WatchedDevice> devices,
                      const CounterDeltas& deltas) {
  std::string text = fmt::format("{} to peer {}", shortfall, peer);
  if (devices.empty()) {
    text += " (its interface is unknown: no route found)";
  } else {
    text += " via " + devices.front().name;
    std::vector<std::string> moved;
    for (const WatchedDevice& device : devices) {
      const auto it = deltas.devices.find(device.name);
      if (it == deltas.devices.end()) continue;
      std::string counters;
      for (const auto& [counter, delta] : it->second) {
        if (delta == 0) continue;
        counters += fmt::format("{}{} +{}", counters.empty() ? "" : ", ", counter, delta);
      }
      if (counters.empty()) continue;
      const std::string who =
          device.upper.empty() ? device.name : fmt::format("{} member {}", device.upper, device.name);
      moved.push_back(who + ": " + counters);
    }
    if (moved.empty()) {
      text += ": no interface counter moved: the loss is in a qdisc or shaper here, or past this host";
    } else {
      std::string joined;
      for (const std::string& m : moved) joined += (joined.empty() ? "" : "; ") + m;
      text += " (" + joined + ")";
    }
  }
  if (deltas.tcp_retransmits && *deltas.tcp_retransmits > 0) {
    text += fmt::format("; TCP retransmits +{} (host-wide)", *deltas.tcp_retransmits);
  }
  return text;
}

std::string DescribeMtuMismatch(std::string_view peer, std::string_view interface, std::uint32_t local,
                                std::uint32_t remote) {
  return fmt::format("MTU mismatch with {}: {} {} here, {} there", peer, interface, local, remote);
}

}  // namespace hostperf::probes::net
