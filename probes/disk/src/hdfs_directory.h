#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "directory_run.h"
#include "feedback.h"
#include "hostperf/probes/disk/workload.h"

// vioperf's HDFS test of one directory URL, in a full run beside its local
// directories.
namespace hostperf::probes::disk {

// vioperf reads HDFS, it does not write it; its files must hold 10 MB.
inline constexpr std::array<DiskTest, 2> kHdfsTests = {DiskTest::kRead, DiskTest::kSkipRead};
inline constexpr std::uint64_t kHdfsMinFileSize = 10ULL << 20;

// Read and SkipRead over the directory's files of 10 MB or more, one file
// per thread at least, through WebHDFS (HADOOP_CONF_DIR's configuration).
// Nothing is written, so neither room nor the byte budget is checked.
DirectoryOutcome RunHdfsDirectory(RunScope& run, const Feedback& feedback, const std::string& url,
                                  nlohmann::json& dir_json);

}  // namespace hostperf::probes::disk
