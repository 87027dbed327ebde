#include "hostperf/probes/net/command.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "hostperf/base/files.h"
#include "hostperf/base/flags.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/net/results.h"

namespace hostperf::probes::net {

const char* const kNetUsage = R"(usage: hostperf net [options] [latency] [tcp-throughput] [udp-throughput] [connections]

vnetperf against hosts running hostperf_exporter (no test named: all).
Each host's row is printed as its test ends; on a terminal, stderr also
shows the step running and the time left. Options take "--opt value" or
"--opt=value".
  --condense             one-line JSON results
  --datarate R           rate limit in MB/s; 0 (default) steps 32 64 128 256 512 640 768 1024 2048
  --duration S           seconds per test and rate (default 1); latency paces its
                         pings over it (one per 2 ms, 20 to 6000)
  --hosts h1,h2 | FILE   hosts (names or addresses, optional :port); a file holds
                         one per line or a comma-separated list; default: the
                         configured peers
  --ignore-bad-hosts     test the reachable hosts when some are not, and exit 0
                         when a host could not be measured in a test
  --json                 print the result as JSON (as the run API returns it)
                         instead of the tables; no results file unless --output-file
  --list-tests           list the tests and exit
  --output-file F        JSON results file (default results.<timestamp>.json)
  --ports p[,p2,p3]      responder ports (default: probes.net.ports, 14159 unless
                         configured); one port means it and the next two, as in
                         vnetperf (14159 -> 14159,14160,14161). Hosts without
                         :port are reached on the first; with three ports, TCP
                         throughput uses the second and UDP the third where
                         a host's responder answers on them (else the first)
  --log-level L          INFO, ERROR, DEBUG or WARN (default WARN)
  --max-connections N    connections test: connections to hold open at each host
                         at once (default: probes.net.max_connections, 64); a host
                         configured for fewer is tried up to its own limit
The peers' secret comes from net.secret_file in --config.file. Among two or
more hosts, throughput runs among all of them at once when --config.file also
names net.orchestration_key_file (the hosts trust its public half), else from
this host to each.

Hosts without hostperf (vnetperf's way, with the system's ssh and scp): any of
these options, or hosts without :port when no net.secret_file is configured,
copies hostperf-peer (one static program) to each host over SCP,
starts it over SSH with one-time credentials on its standard input (a secret
of that host's own, the public half of a key made for the run: only this CLI
can direct the peers), runs the tests against it on its three ports (--ports,
default 14159,14160,14161: latency and connections on the first, TCP
throughput on the second, UDP throughput on the third), then
stops it and removes the copy, also on Ctrl-C. Hosts are [user@]host, without
:port.
  --ssh                  use SSH with the client's defaults (keys, agent, ~/.ssh/config)
  --identity-file F      private key for ssh and scp (-i F)
  --ssh-options "O"      options for ssh, e.g. "-p 2222 -o ConnectTimeout=5"
  --scp-options "O"      options for scp, e.g. "-P 2222"
  --tmp-dir D            where the copy goes on each host (default /tmp)
  --installed            use the hosts' installed /usr/libexec/hostperf/hostperf-peer
                         instead of copying it
  --vertica-install [DIR]
                         the same with DIR as the install prefix on every host:
                         DIR/libexec/hostperf/hostperf-peer (default /usr); DIR is
                         taken when it is an absolute path
  --collect-logs         bring each host's hostperf-peer log back
  --log-dir D            where --collect-logs puts them (default .; made if missing)
)";

namespace {

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (const char c : text) {
    if (c == ',' || c == '\n' || c == ' ' || c == '\t' || c == '\r') {
      if (!item.empty()) items.push_back(item);
      item.clear();
    } else {
      item.push_back(c);
    }
  }
  if (!item.empty()) items.push_back(item);
  return items;
}

std::optional<double> ParseNumber(const std::string& text) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// --hosts: a list, or a file holding one.
Result<nlohmann::json> ParseHosts(const std::string& text) {
  std::string list = text;
  std::error_code ec;
  if (std::filesystem::is_regular_file(text, ec)) {
    auto content = ReadBoundedFile(text, "--hosts", kMaxConfigFileBytes);
    if (!content) return Result<nlohmann::json>::Error(content.error());
    list = std::move(content).value();
  }
  const auto hosts = SplitList(list);
  if (hosts.empty()) return Result<nlohmann::json>::Error("--hosts: no hosts in \"" + text + "\"");
  return nlohmann::json(hosts);
}

// --ports: vnetperf's list, where one port means it and the next two.
Result<nlohmann::json> ParsePorts(const std::string& text) {
  using R = Result<nlohmann::json>;
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& port : SplitList(text)) {
    const auto number = ParseNumber(port);
    if (!number || *number < 1 || *number > 65535 || *number != static_cast<int>(*number)) {
      return R::Error("--ports: bad port \"" + port + "\"");
    }
    ports.push_back(static_cast<int>(*number));
  }
  if (ports.size() == 1) {
    const int first = ports[0].get<int>();
    if (first > 65533) return R::Error("--ports: " + std::to_string(first) + " and the next two exceed 65535");
    ports.push_back(first + 1);
    ports.push_back(first + 2);
  }
  return ports;
}

// A path that goes into the remote shell's command line: absolute, and
// nothing the shell would read as quoting or expansion.
bool SafeAbsolutePath(const std::string& path) {
  return !path.empty() && path.front() == '/' && path.find_first_of("'\"\\$`\n") == std::string::npos;
}

// The SSH flags (--ssh, --installed, --identity-file, ...): they make the run
// start hostperf-peer on bare hosts.
Result<void> ApplyRemoteFlag(const FlagValue& flag, NetCommand& command) {
  RemoteOptions& remote = command.remote ? *command.remote : command.remote.emplace();
  if (flag.Is("ssh") || flag.Is("installed") || flag.Is("vertica-install") || flag.Is("collect-logs")) {
    if (flag.Is("installed") || flag.Is("vertica-install")) remote.installed = true;
    if (flag.Is("collect-logs")) remote.collect_logs = true;
    return {};
  }
  const std::string& text = flag.value;  // the valued SSH options
  if (text.empty()) return Result<void>::Error(flag.spelled + " needs a value");
  if (flag.Is("identity-file")) {
    if (::access(text.c_str(), R_OK) != 0) return Result<void>::Error("--identity-file: cannot read " + text);
    remote.identity_file = text;
  } else if (flag.Is("ssh-options") || flag.Is("scp-options")) {
    auto words = SplitOptions(text);
    if (!words) return Result<void>::Error(flag.spelled + ": " + words.error());
    (flag.Is("ssh-options") ? remote.ssh_options : remote.scp_options) = std::move(words).value();
  } else if (flag.Is("tmp-dir")) {
    if (!SafeAbsolutePath(text)) {
      return Result<void>::Error("--tmp-dir: an absolute path without quotes or shell characters");
    }
    remote.tmp_dir = text;
  } else if (flag.Is("log-dir")) {
    remote.log_dir = text;
  }
  return {};
}

// One flag into the command or the run's options.
Result<void> ApplyFlag(const FlagValue& flag, NetCommand& command, nlohmann::json& options) {
  using R = Result<void>;
  const std::string& text = flag.value;
  if (flag.Is("help")) {
    command.help = true;
  } else if (flag.Is("condense")) {
    command.condense = true;
  } else if (flag.Is("ignore-bad-hosts")) {
    options["ignore_bad_hosts"] = true;
  } else if (flag.Is("list-tests")) {
    command.list_tests = true;
  } else if (flag.Is("json")) {
    command.json = true;
  } else if (flag.Is("max-connections")) {
    const auto number = ParseNumber(text);
    if (!number || *number < 1 || *number > 65535 || *number != static_cast<int>(*number)) {
      return R::Error(flag.spelled + " needs a whole number from 1 to 65535");
    }
    options["max_connections"] = static_cast<int>(*number);
  } else if (flag.Is("datarate") || flag.Is("duration")) {
    const auto number = ParseNumber(text);
    if (!number) return R::Error(flag.spelled + " needs a number");
    options[std::string(flag.spec->name)] = *number;
  } else if (flag.Is("hosts")) {
    auto hosts = ParseHosts(text);
    if (!hosts) return hosts.failure();
    options["hosts"] = std::move(hosts).value();
  } else if (flag.Is("output-file")) {
    if (text.empty()) return R::Error("--output-file needs a file name");
    command.output_file = text;
  } else if (flag.Is("ports")) {
    auto ports = ParsePorts(text);
    if (!ports) return ports.failure();
    options["ports"] = std::move(ports).value();
  } else if (flag.Is("log-level")) {
    std::string level = text;
    std::transform(level.begin(), level.end(), level.begin(), ::tolower);
    if (level != "info" && level != "error" && level != "debug" && level != "warn") {
      return R::Error("--log-level: expected INFO, ERROR, DEBUG or WARN");
    }
    command.log_level = level;
  } else {
    return ApplyRemoteFlag(flag, command);
  }
  return {};
}

// A --hosts entry with a :port (a responder's address, not an SSH destination);
// an IPv6 address alone has several colons.
bool NamesAPort(const std::string& entry) {
  const auto at = entry.rfind('@');
  const std::string bare = at == std::string::npos ? entry : entry.substr(at + 1);
  return bare.find(':') != std::string::npos && bare.find(':') == bare.rfind(':');
}

// With SSH: the hosts to start hostperf-peer on leave the run's options
// (their host:port replace them once the peers run).
Result<void> TakeRemoteHosts(NetCommand& command, nlohmann::json& options) {
  using R = Result<void>;
  if (!options.contains("hosts")) return R::Error("SSH options need --hosts (the hosts to start hostperf-peer on)");
  for (const auto& host : options["hosts"]) {
    const std::string name = host.get<std::string>();
    if (NamesAPort(name)) return R::Error("--hosts: \"" + name + "\": over SSH hosts take no :port (--ports sets it)");
  }
  command.remote_hosts = options["hosts"].get<std::vector<std::string>>();
  options.erase("hosts");  // replaced by the peers' host:port once they run
  if (options.contains("ports")) command.remote->ports = options["ports"].get<std::vector<std::uint16_t>>();
  // Each peer holds the connections test's connections (and the plans' sessions).
  if (options.contains("max_connections"))
    command.remote->connections = options["max_connections"].get<std::uint32_t>();
  if (command.remote->collect_logs) {
    // Made when missing (the logs hold host names and errors: owner-only).
    std::error_code ec;
    if (!std::filesystem::is_directory(command.remote->log_dir, ec)) {
      const mode_t mask = ::umask(077);
      std::filesystem::create_directories(command.remote->log_dir, ec);
      ::umask(mask);
      if (ec || !std::filesystem::is_directory(command.remote->log_dir)) {
        return R::Error("--log-dir: cannot make the directory " + command.remote->log_dir +
                        (ec ? ": " + ec.message() : ""));
      }
    }
  }
  return {};
}

// vnetperf's `--vertica-install DIR`: the hosts already have the tools
// under DIR, an install prefix (hostperf-peer is DIR/libexec/hostperf/
// hostperf-peer, as the package puts it under /usr). Its value is taken
// only when it is an absolute path (`--vertica-install=DIR` too), so that
// the bare flag before a test name keeps meaning the package's own path.
// The arguments with that value taken out, and the directory.
std::pair<std::vector<std::string>, std::string> TakeInstallDirectory(const std::vector<std::string>& args) {
  static constexpr std::string_view kFlag = "--vertica-install";
  std::vector<std::string> rest;
  std::string directory;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      rest.insert(rest.end(), args.begin() + static_cast<long>(i), args.end());
      break;
    }
    if (args[i].rfind(std::string(kFlag) + "=", 0) == 0) {
      directory = args[i].substr(kFlag.size() + 1);
      rest.emplace_back(kFlag);
    } else if (args[i] == kFlag && i + 1 < args.size() && args[i + 1].rfind('/', 0) == 0) {
      directory = args[++i];
      rest.emplace_back(kFlag);
    } else {
      rest.push_back(args[i]);
    }
  }
  return {rest, directory};
}

// Whether every --hosts entry can be an SSH destination ([user@]host, no :port).
bool AllSshDestinations(const nlohmann::json& options) {
  if (!options.contains("hosts")) return false;
  return std::none_of(options["hosts"].begin(), options["hosts"].end(),
                      [](const nlohmann::json& host) { return NamesAPort(host.get<std::string>()); });
}

}  // namespace

Result<NetCommand> ParseNetCommand(const std::vector<std::string>& all_args, bool ssh_by_default) {
  using R = Result<NetCommand>;
  const auto [args, install_directory] = TakeInstallDirectory(all_args);
  if (!install_directory.empty() && !SafeAbsolutePath(install_directory)) {
    return R::Error("--vertica-install: an absolute directory without quotes or shell characters");
  }
  static constexpr FlagSpec kFlags[] = {
      Switch("help", "h"),
      Switch("condense"),
      Switch("ignore-bad-hosts"),
      Switch("list-tests"),
      Switch("json"),
      Valued("datarate", "", "a number"),
      Valued("duration", "", "a number"),
      Valued("hosts", "", "a list or a file"),
      Valued("output-file", "", "a file name"),
      Valued("ports", "", "a list of port numbers"),
      Valued("log-level", "", "a level"),
      Valued("max-connections", "", "a number"),
      Switch("ssh"),
      Valued("identity-file", "", "a file name"),
      Valued("ssh-options", "", "options"),
      Valued("scp-options", "", "options"),
      Valued("tmp-dir", "", "a directory"),
      Switch("installed"),
      Switch("vertica-install"),
      Switch("collect-logs"),
      Valued("log-dir", "", "a directory"),
  };
  auto parsed_flags = ParseFlags(args, {kFlags});
  if (!parsed_flags) return parsed_flags.failure();
  NetCommand command;
  nlohmann::json options = nlohmann::json::object();
  for (const FlagValue& flag : parsed_flags->flags) {
    if (auto applied = ApplyFlag(flag, command, options); !applied) return applied.failure();
  }
  if (!command.remote && ssh_by_default && AllSshDestinations(options)) command.remote.emplace();
  if (command.remote && !install_directory.empty()) {
    std::string prefix = install_directory;
    while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
    command.remote->installed_program = prefix + "/libexec/hostperf/hostperf-peer";
  }
  if (command.remote) {
    if (auto taken = TakeRemoteHosts(command, options); !taken) return taken.failure();
  }
  if (!parsed_flags->positional.empty()) options["tests"] = parsed_flags->positional;
  auto parsed = ParseNetOptions(options);
  if (!parsed) return R::Error(parsed.error());
  command.options = std::move(parsed).value();
  return command;
}

std::string DefaultResultsFileName() {
  return "results." + VnetperfTimestamp(std::chrono::system_clock::now()) + ".json";
}

Result<bool> WriteResultsFile(const std::string& path, const nlohmann::json& result, bool condense) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Result<bool>::Error("cannot write " + path);
  out << (condense ? result.dump() : result.dump(2)) << "\n";
  out.close();
  if (!out) return Result<bool>::Error("cannot write " + path);
  return true;
}

}  // namespace hostperf::probes::net
