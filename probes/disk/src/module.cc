#include "hostperf/probes/disk/module.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>

#include "hostperf/probes/disk/disk_probe.h"
#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/host_facts.h"

namespace hostperf::probes::disk {
namespace {

using namespace std::chrono_literals;

void DeclareKeys(config::Schema& schema, DiskProbeConfig& disk) {
  schema.StringList("directories", &disk.directories, [](const std::string& directory) -> std::string {
    // Every host reading a shared cluster every few minutes is a load on it,
    // not a measurement of this host.
    if (hdfs::IsHdfsUrl(directory)) {
      return "HDFS is read by full runs only (hostperf io, the run API's \"directories\" option)";
    }
    return "";
  });
  // toml++ reads a table's keys in order, and "directories" sorts before
  // "directory_roles": the directories are known when the roles are checked.
  schema.NameTable(
      "directory_roles", &disk.directory_roles, kMaxRoleLength, R"({ "/data" = "data" })",
      [&disk](const std::string& directory) -> std::string {
        if (std::find(disk.directories.begin(), disk.directories.end(), directory) != disk.directories.end()) {
          return "";
        }
        return "\"" + directory + "\" is not in probes.disk.directories";
      });
  schema.Size("bytes_per_run", &disk.bytes_per_run);
  schema.Uint("threads", &disk.threads, 1, 1024);
  schema.Uint("files_per_thread", &disk.files_per_thread, 1, 64);
  schema.Size("max_buffer_size", &disk.max_buffer_size);
  schema.Bool("disable_direct_io", &disk.disable_direct_io);
  schema.Bool("disable_crc", &disk.disable_crc);
  schema.Size("reserve", &disk.reserve);
  schema.Number("member_slow_ratio", &disk.member_slow_ratio, {1.1, 100, true, "[1.1, 100]"});
  schema.Bool("attribute_members", &disk.attribute_members);
  schema.StringList("hdfs_clusters", &disk.hdfs_clusters, hdfs::ClusterEntryError);
  schema.StringList("hdfs_datanodes", &disk.hdfs_datanodes, [](const std::string& entry) -> std::string {
    if (entry.find_first_of("/@: ") != std::string::npos || entry == ".") {
      return "expected a DataNode host name or address, or \".domain\"";
    }
    return "";
  });
}

config::SectionSchema Section() {
  return config::DescribeSection<DiskProbeConfig>("disk", {true, 15min, 5min}, DeclareKeys);
}

// vioperf: banner, direct I/O line per directory, table rows as they come,
// JSON log at the end; non-zero exit with the reason when a directory fails.
int Command(const std::vector<std::string>& args, const CommandContext& context) {
  auto parsed = ParseIoCommand(args);
  if (!parsed) return context.usage_error(parsed.error());
  const IoCommand& command = parsed.value();
  if (command.help) {
    std::fputs(kIoUsage, stdout);
    return 0;
  }
  auto options = std::make_shared<FullRunOptions>(command.options);
  // --debug: the engine logs every file, test and bad block at info level.
  if (options->debug) spdlog::set_level(spdlog::level::debug);
  // vioperf tests the current directory when none is given.
  if (options->directories.empty()) options->directories = {std::filesystem::current_path().string()};
  const std::string log_file = command.log_file.empty() ? DefaultLogFileName() : command.log_file;
  std::function<void(const nlohmann::json&)> on_report;
  if (!command.json) {
    std::fputs(FormatVioperfBanner(ReadCpuTopology({}).physical_cores).c_str(), stdout);
    on_report = [header_printed = false](const nlohmann::json& entry) mutable {
      const std::string kind = entry.value("kind", "");
      if (kind == "directory") std::fputs(FormatDirectoryLine(entry).c_str(), stdout);
      if (kind == "members") std::fputs(FormatArrayReport(entry).c_str(), stdout);
      if (kind == "row") {
        if (!header_printed) std::fputs(("\n" + FormatTableHeader()).c_str(), stdout);
        header_printed = true;
        std::fputs(FormatTableRow(entry).c_str(), stdout);
      }
      std::fflush(stdout);
    };
  }
  const auto outcome = context.run_full(std::move(options), std::move(on_report));
  const bool ok = outcome.status == ProbeOutcome::Status::kSuccess;
  if (command.json) PrintJsonResult(outcome);
  if (!command.json || !command.log_file.empty()) {
    if (const auto written =
            WriteJsonLog(log_file, outcome.result, outcome.reason, outcome.message, command.condense_log);
        !written) {
      std::fprintf(stderr, "%s: %s\n", CommandLabel("io").c_str(), written.error().c_str());
      if (ok) return 1;
    }
  }
  return CommandExitCode("io", outcome);
}

}  // namespace

std::vector<Figure> DiskFigures(const nlohmann::json& result) {
  std::vector<Figure> out;
  const double cores = std::max(1.0, NumberField(result, "physical_cores").value_or(1));
  for (const nlohmann::json& directory : ArrayField(result, "directories")) {
    const std::string path = TextField(directory, "directory");
    for (const nlohmann::json& test : ArrayField(directory, "tests")) {
      const std::string name = TextField(test, "test");
      if (name != "Write" && name != "Read") continue;  // ReWrite and SkipRead do not count
      const auto rate = NumberField(test, "throughput_bytes_per_second");
      if (!rate) continue;
      const double per_core = *rate / cores;
      out.push_back({name == "Write" ? "write_bytes_per_second_per_core" : "read_bytes_per_second_per_core", path,
                     name + " per physical core", per_core, FormatNumber("%.1f MB/s", per_core / kReferenceMB),
                     "pass ≥ 40 MB/s, warn ≥ 20 MB/s", AtLeast(per_core / kReferenceMB, 40, 20)});
    }
  }
  // The array behind each directory: its slowest member against its
  // siblings (a warning from the configured member_slow_ratio on).
  for (const nlohmann::json& directory : ArrayField(result, "directories")) {
    const double limit = NumberField(directory, "member_slow_ratio").value_or(2.0);
    std::optional<Figure> worst;
    for (const nlohmann::json& member : ArrayField(directory, "members")) {
      for (const char* op : {"read", "write"}) {
        const auto ratio = NumberField(member, op == std::string("read") ? "read_ratio" : "write_ratio");
        if (!ratio || (worst && worst->value >= *ratio)) continue;
        const std::string device = TextField(member, "device");
        worst = Figure{"member_service_ratio",
                       TextField(directory, "directory") + " " + device,
                       "slowest member vs its siblings",
                       *ratio,
                       FormatNumber("%.1f×", *ratio) + " (" + device + ", " + op + "s)",
                       FormatNumber("pass ≤ %.1f×", limit),
                       AtMost(*ratio, limit, std::numeric_limits<double>::max())};
      }
    }
    if (worst) out.push_back(*worst);
  }
  return out;
}

const ProbeModule kModule = {
    .name = "disk",
    .create = &CreateDiskProbe,
    .config_section = &Section,
    .parse_options = &ParseDiskModuleOptions,
    .figures = &DiskFigures,
    .command = {"io",
                "  io [vioperf options] [DIR...]\n"
                "                      vioperf: Write, ReWrite, Read and SkipRead per directory,\n"
                "                      CRC32C-verified (hostperf io --help for the options)\n",
                &Command, "vioperf"},
    .failure_reasons = {"no_space", "io_error", "permission_denied", "direct_io_unsupported", "bad_directory",
                        "verify_error", "bad_options", "out_of_memory", "hdfs_unreachable", "hdfs_standby", "hdfs_auth",
                        "hdfs_error"},
    .skip_reasons = {"no_space", "budget_exhausted"},
};

}  // namespace hostperf::probes::disk
