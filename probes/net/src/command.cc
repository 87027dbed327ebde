#include "hostperf/probes/net/command.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hostperf/base/files.h"
#include "hostperf/probes/flags.h"
#include "hostperf/probes/net/net_probe.h"

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
  --ignore-bad-hosts     test the reachable hosts when some are not
  --json                 print the result as JSON (as the run API returns it)
                         instead of the tables; no results file unless --output-file
  --list-tests           list the tests and exit
  --output-file F        JSON results file (default results.<timestamp>.json)
  --ports p[,p2,p3]      responder ports (default: probes.net.ports, 14159 unless
                         configured); one port means it and the next two, as in
                         vnetperf (14159 -> 14159,14160,14161). Hosts without
                         :port are reached on the first
  --log-level L          INFO, ERROR, DEBUG or WARN (default WARN)
The peers' secret comes from net.secret_file in --config.file.
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

}  // namespace

Result<NetCommand> ParseNetCommand(const std::vector<std::string>& args) {
  using R = Result<NetCommand>;
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
  };
  auto parsed_flags = ParseFlags(args, {kFlags});
  if (!parsed_flags) return parsed_flags.failure();
  NetCommand command;
  nlohmann::json options = nlohmann::json::object();
  for (const FlagValue& flag : parsed_flags->flags) {
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
    } else if (flag.Is("datarate") || flag.Is("duration")) {
      const auto number = ParseNumber(text);
      if (!number) return R::Error(flag.spelled + " needs a number");
      options[std::string(flag.spec->name)] = *number;
    } else if (flag.Is("hosts")) {
      std::string list = text;
      std::error_code ec;
      if (std::filesystem::is_regular_file(text, ec)) {
        auto content = ReadBoundedFile(text, "--hosts", kMaxConfigFileBytes);
        if (!content) return R::Error(content.error());
        list = std::move(content).value();
      }
      const auto hosts = SplitList(list);
      if (hosts.empty()) return R::Error("--hosts: no hosts in \"" + text + "\"");
      options["hosts"] = hosts;
    } else if (flag.Is("output-file")) {
      if (text.empty()) return R::Error("--output-file needs a file name");
      command.output_file = text;
    } else if (flag.Is("ports")) {
      nlohmann::json ports = nlohmann::json::array();
      for (const auto& port : SplitList(text)) {
        const auto number = ParseNumber(port);
        if (!number || *number < 1 || *number > 65535 || *number != static_cast<int>(*number)) {
          return R::Error("--ports: bad port \"" + port + "\"");
        }
        ports.push_back(static_cast<int>(*number));
      }
      // vnetperf: one port means it and the next two.
      if (ports.size() == 1) {
        const int first = ports[0].get<int>();
        if (first > 65533) return R::Error("--ports: " + std::to_string(first) + " and the next two exceed 65535");
        ports.push_back(first + 1);
        ports.push_back(first + 2);
      }
      options["ports"] = ports;
    } else if (flag.Is("log-level")) {
      std::string level = text;
      std::transform(level.begin(), level.end(), level.begin(), ::tolower);
      if (level != "info" && level != "error" && level != "debug" && level != "warn") {
        return R::Error("--log-level: expected INFO, ERROR, DEBUG or WARN");
      }
      command.log_level = level;
    }
  }
  if (!parsed_flags->positional.empty()) options["tests"] = parsed_flags->positional;
  auto parsed = ParseNetOptions(options);
  if (!parsed) return R::Error(parsed.error());
  command.options = std::move(parsed).value();
  return command;
}

std::string DefaultResultsFileName() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d_%H:%M:%S", &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  return fmt::format("results.{},{:03d}.json", text, ms);
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
