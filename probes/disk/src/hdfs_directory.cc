#include "hdfs_directory.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "hostperf/probes/disk/hdfs.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;

// A directory's files that vioperf reads: 10 MB or more, by name.
struct HdfsFiles {
  std::vector<hdfs::FileStatus> files;
  std::size_t small = 0;  // smaller files, ignored
  std::uint64_t bytes = 0;
};

HdfsFiles ReadableFiles(std::vector<hdfs::FileStatus> listed) {
  HdfsFiles out;
  for (auto& entry : listed) {
    if (entry.directory) continue;
    if (entry.length < kHdfsMinFileSize) {
      ++out.small;
      continue;
    }
    out.bytes += entry.length;
    out.files.push_back(std::move(entry));
  }
  std::sort(out.files.begin(), out.files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

// The directory's readable files, enough for one per thread.
Result<HdfsFiles> ListDirectory(const hdfs::WebHdfsClient& client, const std::string& path, const Plan& plan,
                                const std::string& url) {
  const auto status = client.GetFileStatus(path);
  if (!status) return status.failure();
  if (!status->directory) {
    return Failure{"bad_directory", "\"" + url + "\" is a file: vioperf reads a directory of files"};
  }
  auto listed = client.ListStatus(path);
  if (!listed) return listed.failure();
  HdfsFiles found = ReadableFiles(std::move(listed).value());
  if (found.files.size() < plan.threads) {
    return Failure{
        "bad_directory",
        fmt::format("\"{}\" holds {} file(s) of 10 MB or more{}; vioperf reads one file per thread, so "
                    "{} threads need {} such files (add files or lower --thread-count)",
                    url, found.files.size(), found.small > 0 ? fmt::format(" ({} smaller ignored)", found.small) : "",
                    plan.threads, plan.threads)};
  }
  return found;
}

}  // namespace

DirectoryOutcome RunHdfsDirectory(RunScope& run, const Feedback& feedback, const std::string& url, json& dir_json) {
  const Plan& plan = run.plan;
  auto env = hdfs::HdfsEnvironment::FromProcess();
  env.ca_file = plan.hdfs_ca_file;
  auto conf = hdfs::LoadHadoopConf(env.conf_dir);
  if (!conf) return DirectoryOutcome::Failed({"bad_options", conf.error()});
  auto target = hdfs::ResolveHdfsUrl(url, *conf);
  if (!target) return DirectoryOutcome::Failed({"bad_options", target.error()});
  if (plan.hdfs_confined) {
    if (auto confined = hdfs::CheckConfiguredCluster(*target, *conf, plan.hdfs_clusters); !confined) {
      return DirectoryOutcome::Failed(confined.failure());
    }
  }
  target->datanode_hosts = plan.hdfs_datanodes;
  auto created = hdfs::WebHdfsClient::Create(*target, env);
  if (!created) return DirectoryOutcome::Failed({"bad_options", created.error()});
  const hdfs::WebHdfsClient& client = **created;
  auto found = ListDirectory(client, target->path, plan, url);
  if (!found) return DirectoryOutcome::Failed(found.failure());
  dir_json.update({{"hdfs", true},
                   {"namenode", client.ActiveNameNode()},
                   {"buffer_size", plan.max_buffer_size},
                   {"files", found->files.size()},
                   {"file_bytes", found->bytes},
                   {"small_files_ignored", found->small},
                   {"user", target->kerberos ? "" : env.user_name}});
  if (!target->nameservice.empty()) dir_json["nameservice"] = target->nameservice;
  feedback.Report("directory", dir_json);
  hdfs::HdfsReadWorkload workload(client, std::move(found->files), plan.threads, plan.max_buffer_size);
  const TestRunner run_test = [&workload](DiskTest test, std::chrono::steady_clock::time_point until,
                                          const std::atomic<bool>& stop, TestCounters& counters, OpLatencies& latencies,
                                          const std::function<void()>& tick) {
    return workload.Run(test, until, stop, counters, latencies, tick);
  };
  std::uint64_t verify_errors = 0;
  const auto tested = RunTests(run, feedback, url, kHdfsTests, run_test, dir_json, verify_errors);
  if (!tested.ok()) return DirectoryOutcome::Failed(tested.failure());
  if (run.context.ShouldStop()) return DirectoryOutcome::Failed(Stopped(run.context, " in \"" + url + "\""));
  return {};
}

}  // namespace hostperf::probes::disk
