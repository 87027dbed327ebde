#include "hostperf/cluster/check_ssh.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

namespace hostperf::cluster {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// What check --ssh copies: this very program, the shared objects it loaded
// under their sonames (what the loader looks them up by), and the loader.
TEST(AgentBundleTest, HoldsThisProgramEveryLoadedLibraryAndTheLoader) {
  const auto bundle = FindAgentBundle();
  ASSERT_TRUE(bundle.ok()) << bundle.error();
  EXPECT_EQ(bundle->files.front(), fs::read_symlink("/proc/self/exe").string());
  EXPECT_EQ(bundle->program, fs::path(bundle->files.front()).filename().string());
  std::set<std::string> names;
  for (const std::string& file : bundle->files) {
    EXPECT_TRUE(file.starts_with("/")) << file;
    EXPECT_TRUE(fs::is_regular_file(file)) << file;
    EXPECT_TRUE(names.insert(fs::path(file).filename().string()).second) << "two files named as " << file;
  }
  EXPECT_TRUE(names.contains("libstdc++.so.6"));
  EXPECT_TRUE(names.contains("libc.so.6"));
  ASSERT_FALSE(bundle->loader.empty());
  EXPECT_TRUE(names.contains(bundle->loader));
}

TEST(AgentBundleTest, TheCommandLineRunsTheProgramThroughTheCopiedLoaderWithEverythingQuoted) {
  const AgentBundle bundle{{"/x/hostperf", "/lib/ld-linux-x86-64.so.2"}, "hostperf", "ld-linux-x86-64.so.2"};
  EXPECT_EQ(
      AgentCommandLine(bundle, "/tmp/hostperf.ab12", "disk"),
      "STATE_DIRECTORY='/tmp/hostperf.ab12/no-state' exec '/tmp/hostperf.ab12/ld-linux-x86-64.so.2' --library-path "
      "'/tmp/hostperf.ab12' '/tmp/hostperf.ab12/hostperf' check-agent 'disk'");
  const AgentBundle alone{{"/x/hostperf"}, "hostperf", ""};
  EXPECT_THAT(AgentCommandLine(alone, "/t/it's", "memory"),
              HasSubstr("exec '/t/it'\\''s/hostperf' check-agent 'memory'"));
}

}  // namespace
}  // namespace hostperf::cluster
