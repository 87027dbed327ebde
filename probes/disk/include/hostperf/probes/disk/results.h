#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hostperf::probes::disk {

// Typed readers of a disk (vioperf) full run's result JSON, so that code
// outside this folder (hostperf check) does not depend on its keys.

// Bytes one throughput test moved and the seconds it took; with the
// gpcheckperf method, also when it started and ended (Unix seconds).
struct TestThroughput {
  double bytes = 0;
  double seconds = 0;
  std::optional<double> started_unix_seconds;
  std::optional<double> finished_unix_seconds;
};

// One directory's Write and Read tests (vioperf's sequential throughput
// tests, ReWrite and SkipRead left out; or the gpcheckperf method's two
// passes). Absent: the test did not run or has no figures.
struct DirectoryThroughput {
  std::string directory;
  std::optional<TestThroughput> write;
  std::optional<TestThroughput> read;
};
// result["directories"] in order; a directory that failed has neither test.
std::vector<DirectoryThroughput> ReadDirectoryThroughput(const nlohmann::json& result);

// Write and Read over the whole run: result["sequential"]'s figures when the
// result has them, else each test summed over the directories (which run one
// after another). A test is absent when it has no bytes or no time.
struct SequentialThroughput {
  std::optional<TestThroughput> write;
  std::optional<TestThroughput> read;
};
SequentialThroughput ReadSequentialThroughput(const nlohmann::json& result);

}  // namespace hostperf::probes::disk
