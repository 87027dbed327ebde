// State files (runs.json, cpu_baselines.json) are written through a
// temporary that no planted link or file can redirect.
#include "hostperf/probes/state_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hostperf/base/files.h"
#include "temp_dir.h"

namespace hostperf::probes {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& path) { return ReadFile(path).value_or(""); }

class StateFileTest : public ::testing::Test {
 protected:
  test_support::TempDir dir_;
  fs::path victim() const { return dir_.path() / "victim"; }
  fs::path target() const { return dir_.path() / "runs.json"; }
  void SetUp() override { std::ofstream(victim()) << "precious\n"; }
};

TEST_F(StateFileTest, ASymlinkAtTheOldTemporaryNameIsNotFollowed) {
  // The old code opened "<path>.tmp" with O_CREAT|O_TRUNC: through this link.
  fs::create_symlink(victim(), fs::path(target()).concat(".tmp"));
  ASSERT_FALSE(WriteFileAtomically(target(), "{\"runs\": []}\n"));
  EXPECT_EQ(Slurp(victim()), "precious\n");
  EXPECT_EQ(Slurp(target()), "{\"runs\": []}\n");
  EXPECT_TRUE(fs::is_symlink(fs::path(target()).concat(".tmp")));  // left alone
}

TEST_F(StateFileTest, PlantedCandidatesAreSkippedNotWrittenThrough) {
  // The names the writer will try, planted in advance: a symlink to the
  // victim and a file of someone else's. Both are skipped (O_EXCL).
  const std::vector<std::string> names = {"aaaa", "bbbb", "cccc"};
  fs::create_symlink(victim(), fs::path(target()).concat(".tmp.aaaa"));
  std::ofstream(fs::path(target()).concat(".tmp.bbbb")) << "theirs\n";
  std::size_t next = 0;
  ASSERT_FALSE(WriteFileAtomically(target(), "new\n", [&] { return names[next++]; }));
  EXPECT_EQ(next, 3u);
  EXPECT_EQ(Slurp(victim()), "precious\n");
  EXPECT_EQ(Slurp(fs::path(target()).concat(".tmp.bbbb")), "theirs\n");
  EXPECT_FALSE(fs::exists(fs::path(target()).concat(".tmp.cccc")));  // renamed into place
  EXPECT_EQ(Slurp(target()), "new\n");
}

TEST_F(StateFileTest, GivesUpWhenEveryNameIsTakenAndLeavesNothing) {
  fs::create_symlink(victim(), fs::path(target()).concat(".tmp.same"));
  const std::error_code error = WriteFileAtomically(target(), "new\n", [] { return std::string("same"); });
  EXPECT_EQ(error, std::errc::file_exists);
  EXPECT_EQ(Slurp(victim()), "precious\n");
  EXPECT_FALSE(fs::exists(target()));
}

TEST_F(StateFileTest, RandomNamesDifferAndNoTemporaryStays) {
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(WriteFileAtomically(target(), "v" + std::to_string(i)));
  EXPECT_EQ(Slurp(target()), "v2");
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir_.path())) entries.push_back(entry.path().filename());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"runs.json", "victim"}));
}

TEST_F(StateFileTest, ReadingRefusesFifosAndOversizedFiles) {
  const fs::path fifo = dir_.path() / "runs.json.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(ReadStateFile(fifo).has_value());  // returns at once
  EXPECT_EQ(ReadStateFile(victim()).value_or(""), "precious\n");
}

// The CLI and the daemon share the state directory: a temporary that another
// live process is about to rename into place is not removed under it.
TEST_F(StateFileTest, AFreshTemporaryOfAnotherProcessIsKept) {
  const fs::path fresh = fs::path(target()).concat(".tmp.Zz3dEf6hIj9k");
  const fs::path old = fs::path(target()).concat(".tmp.Ab3dEf6hIj9k");
  std::ofstream(fresh) << "being written\n";
  std::ofstream(old) << "half\n";
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(old, an_hour_ago);
  RemoveStaleTemporaries(target());
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_FALSE(fs::exists(old));
}

TEST_F(StateFileTest, StaleTemporariesOfACrashAreRemovedNotFollowed) {
  std::ofstream(fs::path(target()).concat(".tmp.Ab3dEf6hIj9k")) << "half\n";
  std::ofstream(fs::path(target()).concat(".tmp")) << "old style\n";
  fs::create_symlink(victim(), fs::path(target()).concat(".tmp.link"));
  std::ofstream(dir_.path() / "runs.json.other") << "kept\n";
  std::ofstream(target()) << "current\n";
  RemoveStaleTemporaries(target(), std::chrono::seconds(0));
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(dir_.path())) entries.push_back(entry.path().filename());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(entries, (std::vector<std::string>{"runs.json", "runs.json.other", "victim"}));
  EXPECT_EQ(Slurp(victim()), "precious\n");
  EXPECT_EQ(Slurp(target()), "current\n");
}

}  // namespace
}  // namespace hostperf::probes
