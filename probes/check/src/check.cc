#include "hostperf/probes/check/check.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hostperf::probes::check {

namespace {

using nlohmann::json;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kStreamMB = 1e6;
// gpcheckperf flags a link, and we a host, below this share of the best.
constexpr double kGoodShare = 0.9;

std::optional<double> Number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string Text(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
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

Result<std::string> NextValue(const std::vector<std::string>& args, std::size_t* i, const std::string& flag) {
  const std::string& arg = args[*i];
  if (arg.size() > flag.size()) return arg.substr(flag.size());  // -d/data
  if (*i + 1 >= args.size()) return Result<std::string>::Error("option " + flag + " needs a value");
  return args[++*i];
}

}  // namespace

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

Result<CheckOptions> ParseCheckArgs(const std::vector<std::string>& args) {
  using R = Result<CheckOptions>;
  CheckOptions options;
  std::string letters = "dsn";  // gpcheckperf's default
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const auto value_of = [&](const char* flag) { return NextValue(args, &i, flag); };
    if (arg == "-D") {
      options.per_host = true;
    } else if (arg == "-v" || arg == "-V") {
      options.verbose = true;
    } else if (arg == "--help" || arg == "-?") {
      options.help = true;
    } else if (arg == "--duration" || arg.starts_with("--duration=")) {
      auto value = arg == "--duration" ? value_of("--duration") : Result<std::string>(arg.substr(11));
      if (!value) return R::Error(value.error());
      options.disk_options["duration"] = *value;
    } else if (arg == "--stream-size") {
      auto value = value_of("--stream-size");
      if (!value) return R::Error(value.error());
      std::uint64_t elements = 0;
      const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), elements);
      if (ec != std::errc() || end != value->data() + value->size() || value->empty()) {
        return R::Error("--stream-size: \"" + *value + "\" is not a number of elements");
      }
      options.memory_options["array_elements"] = elements;
    } else if (arg.starts_with("-S") || arg.starts_with("-B")) {
      const std::string flag = arg.substr(0, 2);
      auto value = value_of(flag.c_str());
      if (!value) return R::Error(value.error());
      options.disk_options[flag == "-S" ? "data_size" : "max_buffer_size"] = *value;
    } else if (arg.starts_with("-d") || arg.starts_with("-h") || arg.starts_with("-r")) {
      const std::string flag = arg.substr(0, 2);
      auto value = value_of(flag.c_str());
      if (!value) return R::Error(value.error());
      if (value->empty()) return R::Error("option " + flag + " needs a non-empty value");
      if (flag == "-d") {
        options.directories.push_back(*value);
      } else if (flag == "-h") {
        options.hosts.push_back(*value);
      } else {
        letters = *value;
      }
    } else {
      return R::Error("unknown option \"" + arg + "\"");
    }
  }
  auto tests = ParseTestSelection(letters);
  if (!tests) return R::Error(tests.error());
  options.tests = *tests;
  if (!options.directories.empty()) options.disk_options["directories"] = options.directories;
  if (options.tests.disk && options.directories.empty() && !options.help) {
    return R::Error("the disk test (-r d) needs at least one -d DIR");
  }
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
  const json& kernels = Member(memory_result, "kernels");
  if (!kernels.is_array()) return nullptr;
  for (const json& kernel : kernels) {
    if (Text(kernel, "kernel") != "copy") continue;
    const auto rate = Number(kernel, "best_bytes_per_second");
    if (!rate || *rate <= 0) return nullptr;
    return {{"bytes_per_second", *rate}};
  }
  return nullptr;
}

nlohmann::json DiskEntryFromDiskResult(const nlohmann::json& disk_result) {
  struct Test {
    const char* key;        // ours
    const char* name;       // the disk probe's test name
    const char* bytes_key;  // its byte counter
  };
  const json& sequential = Member(disk_result, "sequential");
  const json& directories = Member(disk_result, "directories");
  json entry = json::object();
  for (const Test& test : {Test{"write", "Write", "bytes_written"}, Test{"read", "Read", "bytes_read"}}) {
    std::optional<double> bytes = Number(Member(sequential, test.key), "bytes");
    std::optional<double> seconds = Number(Member(sequential, test.key), "seconds");
    if (!bytes && directories.is_array()) {
      for (const json& directory : directories) {
        const json& tests = Member(directory, "tests");
        if (!tests.is_array()) continue;
        for (const json& result : tests) {
          const auto test_bytes = Number(result, test.bytes_key);
          const auto test_seconds = Number(result, "seconds");
          if (Text(result, "test") != test.name || !test_bytes || !test_seconds) continue;
          bytes = bytes.value_or(0) + *test_bytes;
          seconds = seconds.value_or(0) + *test_seconds;
        }
      }
    }
    if (bytes && seconds && *seconds > 0) entry[test.key] = {{"bytes", *bytes}, {"seconds", *seconds}};
  }
  return entry.empty() ? json(nullptr) : entry;
}

nlohmann::json NetworkLinksFromNetResult(const nlohmann::json& net_result) {
  json links = json::array();
  const json& entries = Member(net_result, "links");
  if (!entries.is_array()) return links;
  for (const json& entry : entries) {
    const auto rate = Number(entry, "bytes_per_second");
    if (rate && !Text(entry, "from").empty() && !Text(entry, "to").empty()) {
      links.push_back({{"from", Text(entry, "from")}, {"to", Text(entry, "to")}, {"bytes_per_second", *rate}});
    }
  }
  return links;
}

bool IsLocalHost(std::string_view host, std::string_view local_name) {
  return host == "localhost" || host == "127.0.0.1" || host == "::1" || host == local_name;
}

CheckRun RunCheck(const CheckOptions& options, const FullRunner& run_full, const std::string& local_name) {
  CheckRun run;
  for (const std::string& host : options.hosts) {
    if (!IsLocalHost(host, local_name)) {
      run.errors.push_back(
          fmt::format("host \"{}\": checking remote hosts needs their run API, which is not available yet; "
                      "run hostperf check on that host, or without -h for this host",
                      host));
    }
  }
  if (!run.errors.empty()) return run;
  run.ran = true;
  json host = {{"host", local_name}};
  const auto failed = [&](std::string_view test, const ProbeOutcome& outcome) {
    run.errors.push_back(
        fmt::format("{} test on {} failed: {}: {}", test, local_name, outcome.reason, outcome.message));
  };
  if (options.tests.disk) {
    if (options.verbose) run.notes.push_back("[Info] disk test on " + local_name);
    const ProbeOutcome outcome = run_full("disk", options.disk_options);
    json entry = DiskEntryFromDiskResult(outcome.result);
    if (outcome.status != ProbeOutcome::Status::kSuccess) {
      failed("disk", outcome);
    } else if (entry.is_null()) {
      run.errors.push_back("disk test on " + local_name + ": the disk result has no write or read figures");
    } else {
      host["disk"] = std::move(entry);
    }
  }
  if (options.tests.stream) {
    if (options.verbose) run.notes.push_back("[Info] stream test on " + local_name);
    const ProbeOutcome outcome = run_full("memory", options.memory_options);
    json entry = StreamEntryFromMemoryResult(outcome.result);
    if (outcome.status != ProbeOutcome::Status::kSuccess) {
      failed("stream", outcome);
    } else if (entry.is_null()) {
      run.errors.push_back("stream test on " + local_name + ": the memory result has no copy rate");
    } else {
      host["stream"] = std::move(entry);
    }
  }
  if (options.tests.net != NetMode::kNone) {
    // gpcheckperf's own wording: a network test needs two hosts.
    run.notes.push_back("[Warning] single host only - abandon netperf test");
  }
  run.check["hosts"] = json::array({std::move(host)});
  return run;
}

}  // namespace hostperf::probes::check
