#include "hostperf/probes/disk/options.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>

#include "hostperf/base/flags.h"
#include "hostperf/config/units.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;

constexpr std::uint64_t kMinBufferSize = 4096;
constexpr std::uint64_t kMaxBufferSize = 256ULL << 20;
constexpr std::uint32_t kMaxThreads = 4096;

Result<std::chrono::nanoseconds> Interval(const json& value, std::string_view key) {
  auto parsed = ParseDurationOption(value);
  if (!parsed) return Result<std::chrono::nanoseconds>::Error(std::string(key) + ": " + parsed.error());
  if (parsed.value().count() <= 0)
    return Result<std::chrono::nanoseconds>::Error(std::string(key) + ": must be greater than 0");
  return parsed.value();
}

Result<std::uint64_t> Size(const json& value, std::string_view key) {
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0) return value.get<std::uint64_t>();
  if (!value.is_string()) return Result<std::uint64_t>::Error(std::string(key) + ": expected a size such as \"1mb\"");
  auto parsed = config::ParseSize(value.get<std::string>());
  if (!parsed) return Result<std::uint64_t>::Error(std::string(key) + ": " + parsed.error());
  return parsed.value();
}

Result<std::uint64_t> Count(const json& value, std::string_view key, std::uint64_t low, std::uint64_t high) {
  std::uint64_t n = 0;
  if (value.is_number_integer()) {
    if (value.get<std::int64_t>() < 0) return Result<std::uint64_t>::Error(std::string(key) + ": must not be negative");
    n = value.get<std::uint64_t>();
  } else if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) {
      return Result<std::uint64_t>::Error(std::string(key) + ": \"" + text + "\" is not a whole number");
    }
    n = std::stoull(text);
  } else {
    return Result<std::uint64_t>::Error(std::string(key) + ": expected a whole number");
  }
  if (n < low || n > high) {
    return Result<std::uint64_t>::Error(std::string(key) + ": " + std::to_string(n) + " is out of range [" +
                                        std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return n;
}

}  // namespace

const char* const kIoUsage = R"(usage: hostperf io [--help] [--duration=I] [--log-interval=I] [--log-file=F]
                   [--condense-log] [--thread-count=N] [--max-buffer-size=S]
                   [--preserve-files] [--disable-crc] [--disable-direct-io] [--debug]
                   [--data-size=S] [--files-per-thread=N] [--hdfs-ca-file=F]
                   [--json] [DIR...]

vioperf: sequential Write, ReWrite, Read and SkipRead in each DIR (default:
the current directory), every block verified with CRC32C.

  --duration=I         time shared by all tests, each runs at least once (5min)
  --log-interval=I     a table row every I (10s)
  --log-file=F         JSON log (default: results<date-time>.json here)
  --condense-log       one JSON object per line in the log
  --json               print the result as JSON (as the run API returns it)
                       instead of the tables; no log unless --log-file
  --thread-count=N     threads per directory (default: all online CPUs)
  --max-buffer-size=S  bytes per read or write (1mb)
  --preserve-files     keep the files written (renamed hostperf-preserved-*)
  --disable-crc        check block headers only
  --disable-direct-io  go through the page cache instead of O_DIRECT
  --debug              verbose messages: every file, test and bad block
  --data-size=S        bytes of files per directory (4.5gb, like vioperf)
  --files-per-thread=N files each thread writes (1)
  --hdfs-ca-file=F     HTTPS to HDFS (swebhdfs, dfs.http.policy HTTPS_ONLY):
                       trust the CAs in F instead of the system's

HDFS: a DIR of hdfs://namenode:port/dir, hdfs://nameservice/dir or
hdfs:///dir (the cluster of fs.defaultFS) runs Read and SkipRead only, over
the directory's files of 10 MB or more, one file per thread at least (10 GB
files are best), through WebHDFS. HADOOP_CONF_DIR names the directory of
core-site.xml and hdfs-site.xml (NameNode web addresses, HA name services,
dfs.http.policy, hadoop.security.authentication); HADOOP_USER_NAME the user
(simple auth). On a Kerberized cluster the Kerberos ticket cache is used
(kinit as that principal first). webhdfs://host:port/dir and
swebhdfs://host:port/dir name the NameNode's web port directly.
--preserve-files and --disable-crc do not apply to HDFS.
Intervals: 60s, 60sec, 10min, 1hrs ...; sizes: 512b, 64k, 1mb, 1gigabyte.
)";

Result<FullRunOptions> ParseFullRunOptions(const json& options, std::optional<std::chrono::nanoseconds> duration) {
  using R = Result<FullRunOptions>;
  FullRunOptions out;
  // The run's length, unless the options set their own below.
  if (duration) {
    if (duration->count() <= 0) return R::Error("duration: must be greater than 0");
    out.duration = *duration;
  }
  if (options.is_null()) return out;
  if (!options.is_object()) return R::Error("disk options: expected a JSON object");
  for (const auto& [key, value] : options.items()) {
    if (key == "duration" || key == "log_interval") {
      auto interval = Interval(value, key);
      if (!interval) return R::Error(interval.error());
      (key == "duration" ? out.duration : out.log_interval) = interval.value();
    } else if (key == "thread_count") {
      auto n = Count(value, key, 1, kMaxThreads);
      if (!n) return R::Error(n.error());
      out.thread_count = static_cast<std::uint32_t>(n.value());
    } else if (key == "files_per_thread") {
      auto n = Count(value, key, 1, 64);
      if (!n) return R::Error(n.error());
      out.files_per_thread = static_cast<std::uint32_t>(n.value());
    } else if (key == "max_buffer_size") {
      auto size = Size(value, key);
      if (!size) return R::Error(size.error());
      if (size.value() < kMinBufferSize || size.value() > kMaxBufferSize) {
        return R::Error("max_buffer_size: " + config::FormatSize(size.value()) + " is out of range [4kb, 256mb]");
      }
      out.max_buffer_size = size.value();
    } else if (key == "data_size") {
      auto size = Size(value, key);
      if (!size) return R::Error(size.error());
      if (size.value() < kMinBufferSize) return R::Error("data_size: must be at least 4kb");
      out.data_size = size.value();
      out.data_size_given = true;
    } else if (key == "method") {
      if (value == "vioperf") {
        out.method = FullRunMethod::kVioperf;
      } else if (value == "gpcheckperf") {
        out.method = FullRunMethod::kGpcheckperf;
      } else {
        return R::Error("method: expected \"vioperf\" or \"gpcheckperf\", got " + value.dump());
      }
    } else if (key == "preserve_files" || key == "disable_crc" || key == "disable_direct_io" || key == "debug") {
      if (!value.is_boolean()) return R::Error(key + ": expected true or false");
      const bool flag = value.get<bool>();
      if (key == "preserve_files") out.preserve_files = flag;
      if (key == "disable_crc") out.disable_crc = flag;
      if (key == "disable_direct_io") out.disable_direct_io = flag;
      if (key == "debug") out.debug = flag;
    } else if (key == "hdfs_ca_file") {
      if (!value.is_string() || value.get<std::string>().empty()) return R::Error("hdfs_ca_file: expected a path");
      out.hdfs_ca_file = value.get<std::string>();
    } else if (key == "directories") {
      if (!value.is_array()) return R::Error("directories: expected an array of strings");
      for (const auto& dir : value) {
        if (!dir.is_string() || dir.get<std::string>().empty()) {
          return R::Error("directories: every entry must be a non-empty string");
        }
        out.directories.push_back(dir.get<std::string>());
      }
    } else {
      return R::Error("unknown disk option \"" + key + "\"");
    }
  }
  return out;
}

Result<std::shared_ptr<const ProbeOptions>> ParseDiskModuleOptions(const json& options,
                                                                   std::optional<std::chrono::nanoseconds> duration) {
  return ShareOptions(ParseFullRunOptions(options, duration));
}

Result<IoCommand> ParseIoCommand(const std::vector<std::string>& args) {
  using R = Result<IoCommand>;
  // vioperf's options; the valued ones and the four switches are full-run
  // options under the same name with '_' for '-'.
  static constexpr FlagSpec kFlags[] = {
      Switch("help", "h").Stopping(),
      Valued("duration"),
      Valued("log-interval"),
      Valued("thread-count"),
      Valued("max-buffer-size"),
      Valued("data-size"),
      Valued("files-per-thread"),
      Switch("preserve-files"),
      Switch("disable-crc"),
      Switch("disable-direct-io"),
      Switch("debug"),
      Valued("log-file", "", "a file name"),
      Valued("hdfs-ca-file", "", "a file name"),
      Switch("condense-log"),
      Switch("json"),
  };
  auto parsed_flags = ParseFlags(args, {kFlags});
  if (!parsed_flags) return parsed_flags.failure();
  IoCommand command;
  json options = json::object();
  for (const FlagValue& flag : parsed_flags->flags) {
    if (flag.Is("help")) {
      command.help = true;
      return command;
    } else if (flag.Is("log-file")) {
      if (flag.value.empty()) return R::Error("--log-file needs a file name");
      command.log_file = flag.value;
    } else if (flag.Is("condense-log")) {
      command.condense_log = true;
    } else if (flag.Is("json")) {
      command.json = true;
    } else {
      std::string key(flag.spec->name);
      std::replace(key.begin(), key.end(), '-', '_');
      options[key] = flag.spec->takes_value ? json(flag.value) : json(true);
    }
  }
  for (const std::string& dir : parsed_flags->positional) options["directories"].push_back(dir);
  // Parsed now so that a typo fails before any file is written.
  auto parsed = ParseFullRunOptions(options);
  if (!parsed) return R::Error(parsed.error());
  command.options = std::move(parsed).value();
  command.options.hdfs_confined = false;
  return command;
}

}  // namespace hostperf::probes::disk
