#include "hostperf/cluster/check.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hostperf/base/files.h"
#include "hostperf/base/flags.h"
#include "hostperf/config/units.h"
#include "hostperf/probes/disk/results.h"
#include "hostperf/probes/memory/results.h"
#include "hostperf/probes/net/remote.h"
#include "hostperf/probes/net/results.h"

namespace hostperf::cluster {

namespace {

using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kStreamMB = 1e6;
// gpcheckperf flags a link, and we a host, below this share of the best.
constexpr double kGoodShare = 0.9;
// The net probe's largest datarate option: no practical cap.
constexpr double kNetFullSpeedMBps = 100000;

std::optional<double> Number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

const json& Member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// A string member, made terminal-safe: the formatter prints only these.
std::string Text(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? TerminalSafe(it->get_ref<const std::string&>()) : "";
}

// Why `bytes_per_second` is no bandwidth a host can have; nullopt when it is one.
std::optional<std::string> InvalidRate(double bytes_per_second) {
  if (std::isfinite(bytes_per_second) && bytes_per_second >= 0 && bytes_per_second <= kMaxBytesPerSecond) {
    return std::nullopt;
  }
  return fmt::format("reported an invalid bandwidth ({} B/s; valid: 0 to {:g} B/s)", bytes_per_second,
                     kMaxBytesPerSecond);
}

// The same for a section entry's figures (stream's rate, disk's bytes over seconds).
std::optional<std::string> InvalidEntry(const json& entry) {
  if (const auto rate = Number(entry, "bytes_per_second")) return InvalidRate(*rate);
  for (const char* test : {"write", "read"}) {
    const json& figures = Member(entry, test);
    const auto bytes = Number(figures, "bytes");
    const auto seconds = Number(figures, "seconds");
    if (!bytes || !seconds) continue;
    if (!std::isfinite(*seconds) || *seconds <= 0 || !std::isfinite(*bytes) || *bytes < 0) {
      return fmt::format("reported invalid {} figures ({} bytes in {} s)", test, *bytes, *seconds);
    }
    if (auto invalid = InvalidRate(*bytes / *seconds)) return invalid;
  }
  return std::nullopt;
}

// One host's figure in a section (gpcheckperf's (mbps, time, bytes)).
struct HostFigure {
  std::string host;
  double mb_per_second = 0;
  double seconds = 0;
  double bytes = 0;
};

// printResult: averages, totals, min and max with their host, per-host lines
// with -D, and (our addition) a warning for hosts below 90% of the best.
std::string FormatSection(std::string_view title, const std::vector<HostFigure>& figures,
                          const FormatOptions& options) {
  double total_seconds = 0, total_bytes = 0, total_rate = 0;
  const HostFigure* min = nullptr;
  const HostFigure* max = nullptr;
  for (const HostFigure& figure : figures) {
    total_seconds += figure.seconds;
    total_bytes += figure.bytes;
    total_rate += figure.mb_per_second;
    if (!min || figure.mb_per_second < min->mb_per_second) min = &figure;
    if (!max || figure.mb_per_second > max->mb_per_second) max = &figure;
  }
  std::string out = "\n";
  if (total_seconds > 0) {
    out += fmt::format("  {} avg time (sec): {:.2f}\n", title, total_seconds / static_cast<double>(figures.size()));
  }
  if (total_bytes > 0) out += fmt::format("  {} tot bytes: {:.0f}\n", title, total_bytes);
  out += fmt::format("  {} tot bandwidth (MB/s): {:.2f}\n", title, total_rate);
  out += fmt::format("  {} min bandwidth (MB/s): {:.2f} [{}]\n", title, min->mb_per_second, min->host);
  out += fmt::format("  {} max bandwidth (MB/s): {:.2f} [{}]\n", title, max->mb_per_second, max->host);
  if (options.per_host) {
    out += "  -- per host bandwidth --\n";
    for (const HostFigure& figure : figures) {
      out += fmt::format("     {} bandwidth (MB/s): {:.2f} [{}]\n", title, figure.mb_per_second, figure.host);
    }
  }
  for (const HostFigure& figure : figures) {
    if (figure.mb_per_second < kGoodShare * max->mb_per_second) {
      out +=
          fmt::format("  [Warning] {} bandwidth on {} is no good: {:.2f} MB/s is below 90% of the best {:.2f} [{}]\n",
                      title, figure.host, figure.mb_per_second, max->mb_per_second, max->host);
    }
  }
  return out;
}

// The hosts that have a figure at `path` (e.g. disk.write), in host order.
std::vector<HostFigure> DiskFigures(const json& hosts, const char* test) {
  std::vector<HostFigure> figures;
  for (const json& host : hosts) {
    const json& entry = Member(Member(host, "disk"), test);
    const auto bytes = Number(entry, "bytes");
    const auto seconds = Number(entry, "seconds");
    if (!bytes || !seconds || *seconds <= 0) continue;
    figures.push_back({Text(host, "host"), *bytes / *seconds / kMiB, *seconds, *bytes});
  }
  return figures;
}

std::vector<HostFigure> StreamFigures(const json& hosts) {
  std::vector<HostFigure> figures;
  for (const json& host : hosts) {
    if (const auto rate = Number(Member(host, "stream"), "bytes_per_second")) {
      figures.push_back({Text(host, "host"), *rate / kStreamMB, 0, 0});
    }
  }
  return figures;
}

struct Link {
  std::string from, to;
  double mb_per_second = 0;
};

std::string FormatSummary(const std::vector<Link>& links) {
  std::vector<double> rates;
  for (const Link& link : links) rates.push_back(link.mb_per_second);
  double sum = 0;
  for (const double rate : rates) sum += rate;
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  std::string out = "\n Summary:\n";
  out += fmt::format(" sum = {:.2f} MB/sec\n", sum);
  out += fmt::format(" min = {:.2f} MB/sec\n", sorted.front());
  out += fmt::format(" max = {:.2f} MB/sec\n", sorted.back());
  out += fmt::format(" avg = {:.2f} MB/sec\n", sum / static_cast<double>(sorted.size()));
  out += fmt::format(" median = {:.2f} MB/sec\n", sorted[sorted.size() / 2]);
  out += "\n";
  for (const Link& link : links) {
    if (link.mb_per_second < kGoodShare * sorted.back()) {
      out += fmt::format(" [Warning] connection between {} and {} is no good\n", link.from, link.to);
    }
  }
  return out;
}

// Per-host sums in first-seen order.
std::vector<std::pair<std::string, double>> SumBy(const std::vector<Link>& links, bool by_sender) {
  std::vector<std::pair<std::string, double>> sums;
  for (const Link& link : links) {
    const std::string& host = by_sender ? link.from : link.to;
    auto it = std::find_if(sums.begin(), sums.end(), [&](const auto& entry) { return entry.first == host; });
    if (it == sums.end()) {
      sums.emplace_back(host, link.mb_per_second);
    } else {
      it->second += link.mb_per_second;
    }
  }
  return sums;
}

std::string FormatNetwork(const json& network, const FormatOptions& options) {
  std::vector<Link> links;
  const json& entries = Member(network, "links");
  if (entries.is_array()) {
    for (const json& entry : entries) {
      if (const auto rate = Number(entry, "bytes_per_second")) {
        links.push_back({Text(entry, "from"), Text(entry, "to"), *rate / kMiB});
      }
    }
  }
  if (links.empty()) return "";
  std::string out = "\n";
  if (Text(network, "mode") == "matrix") {
    out += " Full matrix netperf bandwidth test\n";
    out += "\n Per host transfer rates\n";
    for (const auto& [host, rate] : SumBy(links, true)) out += fmt::format(" {} Tx rate: {:.2f}\n", host, rate);
    out += "\n Per host receive rates\n";
    for (const auto& [host, rate] : SumBy(links, false)) out += fmt::format(" {} Rx rate: {:.2f}\n", host, rate);
    if (options.verbose) {
      out += "\n";
      for (const Link& link : links) out += fmt::format(" {} -> {} = {:f}\n", link.from, link.to, link.mb_per_second);
    }
  } else {
    out += " Netperf bisection bandwidth test\n";
    for (const Link& link : links) out += fmt::format(" {} -> {} = {:f}\n", link.from, link.to, link.mb_per_second);
  }
  return out + FormatSummary(links);
}

Result<std::uint16_t> ParsePort(const std::string& text, const std::string& what) {
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) {
    return Result<std::uint16_t>::Error(what + ": \"" + text + "\" is not a port number (1 to 65535)");
  }
  return static_cast<std::uint16_t>(port);
}

// gpcheckperf's -f: one host per line; blank lines and # comments skipped.
Result<std::vector<std::string>> ReadHostFile(const std::string& path) {
  using R = Result<std::vector<std::string>>;
  const auto content = ReadBoundedFile(path, "-f: host file", kMaxConfigFileBytes);
  if (!content) return R::Error(content.error());
  std::istringstream in(*content);
  std::vector<std::string> hosts;
  std::string line;
  while (std::getline(in, line)) {
    if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    const std::string host = line.substr(first, last - first + 1);
    if (host.find_first_of(" \t") != std::string::npos) {
      return R::Error("-f: \"" + path + "\": one host per line, got \"" + host + "\"");
    }
    hosts.push_back(host);
  }
  return hosts;
}

// The net probe's name for the responder of `spec`'s host.
std::string NetTarget(const HostSpec& spec, std::uint16_t net_port) {
  const bool v6 = spec.address.find(':') != std::string::npos;
  if (net_port == 0) return v6 ? "[" + spec.address + "]" : spec.address;
  return (v6 ? "[" + spec.address + "]" : spec.address) + ":" + std::to_string(net_port);
}

// Runs `job(i)` for every index at once and waits for all of them.
template <typename Job>
auto RunConcurrently(std::size_t count, const Job& job) {
  std::vector<decltype(job(std::size_t{0}))> results(count);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t i = 0; i < count; ++i) threads.emplace_back([&, i] { results[i] = job(i); });
  for (auto& thread : threads) thread.join();
  return results;
}

}  // namespace

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) {
      out += fmt::format("\\xc2\\x{:02x}", next);  // a C1 control (U+0080 to U+009F)
      ++i;
    } else {
      out += static_cast<char>(byte);
    }
  }
  return out;
}

std::string_view ToString(NetMode mode) {
  switch (mode) {
    case NetMode::kParallel:
      return "parallel";
    case NetMode::kSerial:
      return "serial";
    case NetMode::kMatrix:
      return "matrix";
    case NetMode::kNone:
      break;
  }
  return "none";
}

Result<TestSelection> ParseTestSelection(std::string_view letters) {
  using R = Result<TestSelection>;
  if (letters.empty()) return R::Error("-r needs at least one of the letters d, s, N, n, M");
  TestSelection selection;
  for (const char letter : letters) {
    NetMode mode = NetMode::kNone;
    switch (letter) {
      case 'd':
        selection.disk = true;
        continue;
      case 's':
        selection.stream = true;
        continue;
      case 'N':
        mode = NetMode::kParallel;
        break;
      case 'n':
        mode = NetMode::kSerial;
        break;
      case 'M':
        mode = NetMode::kMatrix;
        break;
      default:
        return R::Error(fmt::format("-r: unknown test letter '{}' (expected d, s, N, n or M)", letter));
    }
    if (selection.net != NetMode::kNone && selection.net != mode) {
      return R::Error("-r: choose one network test: N (parallel pairs), n (serial pairs) or M (full matrix)");
    }
    selection.net = mode;
  }
  return selection;
}

namespace {

// --duration: the network test's length per link, in seconds.
Result<double> ParseNetSeconds(const std::string& value) {
  // gpcheckperf's netperf length (its disk test is bounded by -S).
  const auto duration = config::ParseDuration(value);
  if (!duration || duration->count() <= 0) {
    return Result<double>::Error("--duration: \"" + value + "\" is not a duration like 15s or 2m");
  }
  return std::chrono::duration<double>(*duration).count();
}

// --stream-size: the stream test's array size in elements.
Result<std::uint64_t> ParseStreamElements(const std::string& value) {
  std::uint64_t elements = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), elements);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
    return Result<std::uint64_t>::Error("--stream-size: \"" + value + "\" is not a number of elements");
  }
  return elements;
}

// One parsed flag into *options; -r's letters go to *letters for later.
Result<void> ApplyCheckFlag(const FlagValue& flag, CheckOptions* options, std::string* letters) {
  using R = Result<void>;
  const std::string& value = flag.value;
  if (flag.Is("D")) {
    options->per_host = true;
  } else if (flag.Is("vV")) {
    options->verbose = true;
  } else if (flag.Is("help")) {
    options->help = true;
  } else if (flag.Is("json")) {
    options->json = true;
  } else if (flag.Is("duration")) {
    auto seconds = ParseNetSeconds(value);
    if (!seconds) return R::Error(seconds.error());
    options->net_seconds = *seconds;
  } else if (flag.Is("api-port") || flag.Is("net-port")) {
    auto port = ParsePort(value, flag.spelled);
    if (!port) return R::Error(port.error());
    (flag.Is("api-port") ? options->api_port : options->net_port) = *port;
  } else if (flag.Is("token-file")) {
    options->token_file = value;
  } else if (flag.Is("tls")) {
    options->tls = true;
  } else if (flag.Is("insecure-http")) {
    options->insecure_http = true;
  } else if (flag.Is("ca-file") || flag.Is("cert-file") || flag.Is("key-file")) {
    if (value.empty()) return R::Error(flag.spelled + " needs a file");
    (flag.Is("ca-file") ? options->ca_file : flag.Is("cert-file") ? options->cert_file : options->key_file) = value;
    options->tls = true;
  } else if (flag.Is("basic-auth-user")) {
    if (value.empty() || value.find(':') != std::string::npos) {
      return R::Error(flag.spelled + ": \"" + value + "\" is not a user name (non-empty, no ':')");
    }
    options->basic_auth_user = value;
  } else if (flag.Is("basic-auth-password-file")) {
    if (value.empty()) return R::Error(flag.spelled + " needs a file");
    options->basic_auth_password_file = value;
  } else if (flag.Is("ssh")) {
    options->ssh = true;
  } else if (flag.Is("ssh-options") || flag.Is("scp-options")) {
    auto words = probes::net::SplitOptions(value);
    if (!words) return R::Error(flag.spelled + ": " + words.error());
    auto& list = flag.Is("ssh-options") ? options->ssh_options : options->scp_options;
    list.insert(list.end(), words->begin(), words->end());
    options->ssh = true;
  } else if (flag.Is("identity-file") || flag.Is("tmp-dir")) {
    if (value.empty()) return R::Error(flag.spelled + " needs a path");
    if (flag.Is("tmp-dir") && !value.starts_with("/")) {
      return R::Error(flag.spelled + ": \"" + value + "\" is not an absolute path");
    }
    (flag.Is("identity-file") ? options->identity_file : options->tmp_dir) = value;
    options->ssh = true;
  } else if (flag.Is("f")) {
    auto hosts = ReadHostFile(value);
    if (!hosts) return R::Error(hosts.error());
    options->hosts.insert(options->hosts.end(), hosts->begin(), hosts->end());
  } else if (flag.Is("stream-size")) {
    auto elements = ParseStreamElements(value);
    if (!elements) return R::Error(elements.error());
    options->memory_options["array_elements"] = *elements;
  } else if (flag.Is("S") || flag.Is("B")) {
    options->disk_options[flag.Is("S") ? "data_size" : "max_buffer_size"] = value;
  } else {
    // -d, -h and -r.
    if (value.empty()) return R::Error("option " + flag.spelled + " needs a non-empty value");
    if (flag.Is("d")) {
      options->directories.push_back(value);
    } else if (flag.Is("h")) {
      options->hosts.push_back(value);
    } else {
      *letters = value;
    }
  }
  return R::Ok();
}

// What no single flag can tell: valid distinct hosts, and flags that need or
// exclude each other.
Result<void> ValidateCheckOptions(const CheckOptions& options) {
  using R = Result<void>;
  for (std::size_t i = 0; i < options.hosts.size(); ++i) {
    if (auto spec = ParseHostSpec(options.hosts[i], options.api_port); !spec) return R::Error(spec.error());
    if (std::find(options.hosts.begin(), options.hosts.begin() + static_cast<long>(i), options.hosts[i]) !=
        options.hosts.begin() + static_cast<long>(i)) {
      return R::Error("host \"" + options.hosts[i] + "\" is given twice");
    }
  }
  if (options.tests.net != NetMode::kNone && options.net_seconds > 60) {
    return R::Error("--duration: the network test runs at most 60s per link");
  }
  if (options.tests.disk && options.directories.empty() && !options.help) {
    return R::Error("the disk test (-r d) needs at least one -d DIR");
  }
  if (options.ssh &&
      (options.tls || options.insecure_http || !options.token_file.empty() || !options.basic_auth_user.empty())) {
    return R::Error(
        "--ssh (or an SSH option) and the run API's options (--tls, --insecure-http, --token-file, "
        "--ca-file, --cert-file, --basic-auth-user) exclude each other");
  }
  if (options.ssh && options.hosts.empty() && !options.help) {
    return R::Error("--ssh needs the hosts: -h HOST or -f HOSTFILE");
  }
  if (options.tls && options.insecure_http) {
    return R::Error("--insecure-http and --tls (or --ca-file, --cert-file) exclude each other");
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return R::Error("--cert-file and --key-file go together (a client certificate and its key)");
  }
  if (options.basic_auth_user.empty() != options.basic_auth_password_file.empty()) {
    return R::Error("--basic-auth-user and --basic-auth-password-file go together");
  }
  return R::Ok();
}

}  // namespace

Result<CheckOptions> ParseCheckArgs(const std::vector<std::string>& args) {
  using R = Result<CheckOptions>;
  // gpcheckperf's short options (valued ones also as -d/data), plus ours.
  static constexpr FlagSpec kFlags[] = {
      Switch("", "D"),
      Switch("", "vV"),
      Switch("help", "?").Stopping(),
      Switch("json"),
      Valued("duration"),
      Valued("api-port"),
      Valued("net-port"),
      Valued("token-file"),
      Valued("stream-size"),
      Valued("", "f"),
      Valued("", "S"),
      Valued("", "B"),
      Valued("", "d"),
      Valued("", "h"),
      Valued("", "r"),
      Switch("tls"),
      Switch("insecure-http"),
      Valued("ca-file"),
      Valued("cert-file"),
      Valued("key-file"),
      Valued("basic-auth-user"),
      Valued("basic-auth-password-file"),
      Switch("ssh"),
      Valued("identity-file"),
      Valued("ssh-options"),
      Valued("scp-options"),
      Valued("tmp-dir"),
  };
  auto parsed_flags = ParseFlags(args, {kFlags});
  if (!parsed_flags) return parsed_flags.failure();
  if (!parsed_flags->positional.empty()) {
    return R::Error("unknown option \"" + parsed_flags->positional.front() + "\"");
  }
  CheckOptions options;
  std::string letters = "dsn";  // gpcheckperf's default
  for (const FlagValue& flag : parsed_flags->flags) {
    if (auto applied = ApplyCheckFlag(flag, &options, &letters); !applied) return R::Error(applied.error());
  }
  auto tests = ParseTestSelection(letters);
  if (!tests) return R::Error(tests.error());
  options.tests = *tests;
  if (!options.directories.empty()) options.disk_options["directories"] = options.directories;
  options.disk_options["method"] = "gpcheckperf";
  if (auto valid = ValidateCheckOptions(options); !valid) return R::Error(valid.error());
  return options;
}

std::string FormatCheckResult(const nlohmann::json& check, const FormatOptions& options) {
  std::string out = "\n ====================\n ==  RESULT\n ====================\n";
  const json& hosts = Member(check, "hosts");
  const json no_hosts = json::array();
  const json& host_list = hosts.is_array() ? hosts : no_hosts;
  for (const char* test : {"write", "read"}) {
    const auto figures = DiskFigures(host_list, test);
    if (!figures.empty()) out += FormatSection(fmt::format("disk {}", test), figures, options);
  }
  if (const auto figures = StreamFigures(host_list); !figures.empty()) out += FormatSection("stream", figures, options);
  out += FormatNetwork(Member(check, "network"), options);
  return out;
}

nlohmann::json StreamEntryFromMemoryResult(const nlohmann::json& memory_result) {
  const auto rate = probes::memory::ReadBestKernelRate(memory_result, "copy");
  if (!rate || *rate <= 0) return nullptr;
  return {{"bytes_per_second", *rate}};
}

nlohmann::json DiskEntryFromDiskResult(const nlohmann::json& disk_result) {
  const auto figures_json = [](const probes::disk::TestThroughput& figures) {
    json out = {{"bytes", figures.bytes}, {"seconds", figures.seconds}};
    if (figures.started_unix_seconds) out["started_unix_seconds"] = *figures.started_unix_seconds;
    if (figures.finished_unix_seconds) out["finished_unix_seconds"] = *figures.finished_unix_seconds;
    return out;
  };
  const probes::disk::SequentialThroughput throughput = probes::disk::ReadSequentialThroughput(disk_result);
  json entry = json::object();
  for (const auto& [key, figures] : {std::pair{"write", throughput.write}, std::pair{"read", throughput.read}}) {
    if (figures) entry[key] = figures_json(*figures);
  }
  if (entry.empty()) return nullptr;
  for (const probes::disk::DirectoryThroughput& directory : probes::disk::ReadDirectoryThroughput(disk_result)) {
    json out = {{"directory", directory.directory}};
    if (directory.write) out["write"] = figures_json(*directory.write);
    if (directory.read) out["read"] = figures_json(*directory.read);
    entry["directories"].push_back(std::move(out));
  }
  return entry;
}

Result<HostSpec> ParseHostSpec(std::string_view spec, std::uint16_t default_api_port) {
  using R = Result<HostSpec>;
  const std::string text(spec);
  HostSpec out;
  out.api_port = default_api_port;
  std::string port;
  if (text.starts_with("[")) {
    const auto close = text.find(']');
    if (close == std::string::npos || close == 1) return R::Error("host \"" + text + "\": unbalanced [ ]");
    out.address = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return R::Error("host \"" + text + "\": expected [address]:port");
      port = text.substr(close + 2);
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    out.address = text.substr(0, text.find(':'));
    port = text.substr(text.find(':') + 1);
  } else {
    out.address = text;  // a name, an IPv4 address or a bare IPv6 address
  }
  if (out.address.empty() || out.address.find_first_of(" \t/") != std::string::npos) {
    return R::Error("host \"" + text + "\": expected a host name or address, optionally with :port");
  }
  if (text.starts_with("[") ? text.find("]:") != std::string::npos : !port.empty() || text.ends_with(":")) {
    auto parsed = ParsePort(port, "host \"" + text + "\"");
    if (!parsed) return R::Error(parsed.error());
    out.api_port = *parsed;
  }
  return out;
}

bool IsLocalHost(std::string_view host, std::string_view local_name) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == local_name;
}

std::vector<NetworkRound> PlanNetworkRounds(std::size_t hosts, NetMode mode) {
  std::vector<NetworkRound> rounds;
  if (hosts < 2 || mode == NetMode::kNone) return rounds;
  const auto both_ways = [](std::size_t a, std::size_t b) { return NetworkRound{{a, b}, {b, a}}; };
  if (mode == NetMode::kMatrix) {
    // Circle method: host 0 stays put, the others rotate; a phantom host
    // (index `hosts`) makes the count even and sits one host out per round.
    const std::size_t n = hosts % 2 == 0 ? hosts : hosts + 1;
    std::vector<std::size_t> ring(n);
    for (std::size_t i = 0; i < n; ++i) ring[i] = i;
    for (std::size_t round = 0; round + 1 < n; ++round) {
      NetworkRound links;
      for (std::size_t i = 0; i < n / 2; ++i) {
        const std::size_t a = ring[i];
        const std::size_t b = ring[n - 1 - i];
        if (a >= hosts || b >= hosts) continue;
        links.emplace_back(a, b);
        links.emplace_back(b, a);
      }
      rounds.push_back(std::move(links));
      std::rotate(ring.begin() + 1, ring.end() - 1, ring.end());
    }
    return rounds;
  }
  NetworkRound together;
  for (std::size_t a = 0; a + 1 < hosts; a += 2) {
    const NetworkRound pair = both_ways(a, a + 1);
    if (mode == NetMode::kSerial) {
      rounds.push_back(pair);
    } else {
      together.insert(together.end(), pair.begin(), pair.end());
    }
  }
  if (!together.empty()) rounds.push_back(std::move(together));
  if (hosts % 2 == 1) rounds.push_back(both_ways(hosts - 1, 0));  // the odd host out
  return rounds;
}

std::optional<double> LinkRateFromNetResult(const nlohmann::json& net_result, const std::string& target,
                                            std::string* error) {
  for (const probes::net::ThroughputRow& row : probes::net::ReadTcpThroughputRows(net_result)) {
    if (row.node != target) continue;
    if (row.outcome != "ok") {
      *error = "session " + row.outcome + (row.error.empty() ? "" : ": " + row.error);
      return std::nullopt;
    }
    if (!row.bytes_received || !row.duration_seconds || *row.duration_seconds <= 0) break;
    return *row.bytes_received / *row.duration_seconds;
  }
  *error = "the net result has no tcp-throughput row for " + target;
  return std::nullopt;
}

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// How a test or link ended, for -v's lines.
std::string Ending(const ProbeOutcome& outcome) {
  return outcome.status == ProbeOutcome::Status::kSuccess ? std::string("done") : "failed (" + outcome.reason + ")";
}

// One check's tests on its hosts, each test on every host (or link) at once;
// the hosts' threads report notes and steps through it.
class CheckRunner {
 public:
  CheckRunner(const CheckOptions& options, const HostRunner& run_on, const RoundRunner& measure_round,
              const CheckProgress& progress, const std::vector<std::string>& hosts, const std::vector<HostSpec>& specs,
              CheckRun& run)
      : options_(options),
        run_on_(run_on),
        measure_round_(measure_round),
        progress_(progress),
        hosts_(hosts),
        specs_(specs),
        run_(run) {}

  // The disk and stream tests; each host's figures land in check["hosts"].
  void RunHostTests() {
    json entries = json::array();
    for (const std::string& host : hosts_) entries.push_back({{"host", host}});
    if (options_.tests.disk) {
      OnEveryHost("disk", "disk", options_.disk_options, "disk", DiskEntryFromDiskResult,
                  "the disk result has no write or read figures", entries);
    }
    if (options_.tests.stream) {
      OnEveryHost("stream", "memory", options_.memory_options, "stream", StreamEntryFromMemoryResult,
                  "the memory result has no copy rate", entries);
    }
    run_.check["hosts"] = std::move(entries);
  }

  // The network test, round by round; the links' rates go to check["network"].
  void RunNetworkTest() {
    if (options_.tests.net == NetMode::kNone) return;
    if (hosts_.size() < 2) {
      // gpcheckperf's own wording: a network test needs two hosts.
      Note("[Warning] single host only - abandon netperf test");
      return;
    }
    json links = json::array();
    const std::vector<NetworkRound> rounds = PlanNetworkRounds(hosts_.size(), options_.tests.net);
    for (std::size_t r = 0; r < rounds.size(); ++r) {
      const NetworkRound& round = rounds[r];
      Step(fmt::format("network test: round {}/{}, {} links", r + 1, rounds.size(), round.size()));
      RecordLinks(round, RunLinks(round), links);
    }
    run_.check["network"] = {{"mode", std::string(ToString(options_.tests.net))}, {"links", std::move(links)}};
  }

 private:
  // Hosts' threads report through these; the lock keeps lines whole.
  void Note(std::string text) {
    text = TerminalSafe(text);  // names hosts, which may come from a host file
    std::lock_guard lock(progress_mu_);
    if (progress_.on_note) progress_.on_note(text);
    run_.notes.push_back(std::move(text));
  }

  void Step(const std::string& text) {
    std::lock_guard lock(progress_mu_);
    if (progress_.on_step) progress_.on_step(text);
  }

  // One test on every host at once; each host's figure lands in its entry.
  void OnEveryHost(std::string_view test, std::string_view probe, const json& probe_options, const char* key,
                   json (*entry_of)(const json&), std::string_view missing, json& entries) {
    if (options_.verbose) {
      for (const std::string& host : hosts_) Note(fmt::format("[Info] {} test on {}", test, host));
    }
    std::size_t done = 0;
    Step(fmt::format("{} test: 0/{} hosts done", test, hosts_.size()));
    const auto outcomes = RunConcurrently(hosts_.size(), [&](std::size_t i) {
      const auto start = std::chrono::steady_clock::now();
      ProbeOutcome outcome = run_on_(hosts_[i], probe, probe_options);
      if (options_.verbose) {
        Note(fmt::format("[Info] {} test on {} {} in {:.1f} s", test, hosts_[i], Ending(outcome), SecondsSince(start)));
      }
      std::lock_guard lock(progress_mu_);
      ++done;
      if (progress_.on_step) progress_.on_step(fmt::format("{} test: {}/{} hosts done", test, done, hosts_.size()));
      return outcome;
    });
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      const ProbeOutcome& outcome = outcomes[i];
      json entry = entry_of(outcome.result);
      if (outcome.status != ProbeOutcome::Status::kSuccess) {
        run_.errors.push_back(
            fmt::format("{} test on {} failed: {}: {}", test, hosts_[i], outcome.reason, outcome.message));
      } else if (entry.is_null()) {
        run_.errors.push_back(fmt::format("{} test on {}: {}", test, hosts_[i], missing));
      } else if (const auto invalid = InvalidEntry(entry)) {
        run_.errors.push_back(fmt::format("{} test on {}: the host {}", test, hosts_[i], *invalid));
      } else {
        entries[i][key] = std::move(entry);
      }
    }
  }

  // A round's links at once.
  std::vector<LinkMeasurement> RunLinks(const NetworkRound& round) {
    if (options_.verbose) {
      for (const auto& [from, to] : round) Note(fmt::format("[Info] netperf {} -> {}", hosts_[from], hosts_[to]));
    }
    const auto start = std::chrono::steady_clock::now();
    const auto ended = [&](std::size_t i, const LinkMeasurement& measured) {
      if (!options_.verbose) return;
      Note(fmt::format("[Info] netperf {} -> {} {} in {:.1f} s", hosts_[round[i].first], hosts_[round[i].second],
                       measured.bytes_per_second ? "done" : "failed", SecondsSince(start)));
    };
    if (!measure_round_) {
      return RunConcurrently(round.size(), [&](std::size_t i) {
        LinkMeasurement measured = ThroughNetProbe(round[i].first, round[i].second);
        ended(i, measured);
        return measured;
      });
    }
    NetworkLinks links;
    for (const auto& [from, to] : round) links.emplace_back(hosts_[from], hosts_[to]);
    std::vector<LinkMeasurement> measured = measure_round_(links, options_.net_seconds);
    measured.resize(round.size(), LinkMeasurement{std::nullopt, "not measured"});
    for (std::size_t i = 0; i < round.size(); ++i) ended(i, measured[i]);
    return measured;
  }

  // The link's sender runs the net probe at its receiver's responder.
  LinkMeasurement ThroughNetProbe(std::size_t from, std::size_t to) {
    // Full speed (the net probe's largest rate cap), as netperf runs.
    const json net_options = {{"hosts", {NetTarget(specs_[to], options_.net_port)}},
                              {"tests", {"tcp-throughput"}},
                              {"datarate", kNetFullSpeedMBps},
                              {"duration", options_.net_seconds}};
    const ProbeOutcome outcome = run_on_(hosts_[from], "net", net_options);
    LinkMeasurement measured;
    if (outcome.status == ProbeOutcome::Status::kSuccess) {
      measured.bytes_per_second =
          LinkRateFromNetResult(outcome.result, NetTarget(specs_[to], options_.net_port), &measured.error);
    } else {
      measured.error = outcome.reason + ": " + outcome.message;
    }
    return measured;
  }

  // Each link's rate into `links`, or its error into the run's errors.
  void RecordLinks(const NetworkRound& round, const std::vector<LinkMeasurement>& measured, json& links) {
    for (std::size_t i = 0; i < round.size(); ++i) {
      const auto [from, to] = round[i];
      const std::optional<double>& rate = measured[i].bytes_per_second;
      if (!rate) {
        run_.errors.push_back(
            fmt::format("network test {} -> {} failed: {}", hosts_[from], hosts_[to], measured[i].error));
        continue;
      }
      if (const auto invalid = InvalidRate(*rate)) {
        run_.errors.push_back(
            fmt::format("network test {} -> {}: the host {} {}", hosts_[from], hosts_[to], hosts_[from], *invalid));
        continue;
      }
      links.push_back({{"from", hosts_[from]}, {"to", hosts_[to]}, {"bytes_per_second", *rate}});
    }
  }

  const CheckOptions& options_;
  const HostRunner& run_on_;
  const RoundRunner& measure_round_;
  const CheckProgress& progress_;
  const std::vector<std::string>& hosts_;
  const std::vector<HostSpec>& specs_;
  CheckRun& run_;
  std::mutex progress_mu_;
};

CheckRun RunCheckUnescaped(const CheckOptions& options, const HostRunner& run_on, const std::string& local_name,
                           const CheckProgress& progress, const RoundRunner& measure_round) {
  CheckRun run;
  const std::vector<std::string> hosts = options.hosts.empty() ? std::vector<std::string>{local_name} : options.hosts;
  std::vector<HostSpec> specs;
  for (const std::string& host : hosts) {
    auto spec = ParseHostSpec(host, options.api_port);
    if (!spec) {
      run.errors.push_back(spec.error());
      return run;
    }
    specs.push_back(*spec);
  }
  run.ran = true;
  CheckRunner runner(options, run_on, measure_round, progress, hosts, specs, run);
  runner.RunHostTests();
  runner.RunNetworkTest();
  return run;
}

}  // namespace

CheckRun RunCheck(const CheckOptions& options, const HostRunner& run_on, const std::string& local_name,
                  const CheckProgress& progress, const RoundRunner& measure_round) {
  CheckRun run = RunCheckUnescaped(options, run_on, local_name, progress, measure_round);
  // Errors carry the hosts' reasons and messages: escaped once, here.
  for (std::string& error : run.errors) error = TerminalSafe(error);
  return run;
}

}  // namespace hostperf::cluster
