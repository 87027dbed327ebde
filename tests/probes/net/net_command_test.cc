#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "hostperf/probes/net/command.h"

namespace hostperf::probes::net {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseNetCommandTest, SeparateValues) {
  const auto parsed = ParseNetCommand({"--hosts", "a,b:9000", "--datarate", "64", "--duration", "2", "--ports",
                                       "7000,7001", "--output-file", "r.json", "--log-level", "INFO", "--condense",
                                       "--ignore-bad-hosts", "latency"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(*parsed->options.hosts, ElementsAre("a", "b:9000"));
  EXPECT_EQ(parsed->options.datarate, 64);
  EXPECT_EQ(parsed->options.duration, std::chrono::seconds(2));
  EXPECT_THAT(*parsed->options.ports, ElementsAre(7000, 7001));
  EXPECT_EQ(parsed->output_file, "r.json");
  EXPECT_EQ(parsed->log_level, "info");
  EXPECT_TRUE(parsed->condense);
  EXPECT_TRUE(parsed->options.ignore_bad_hosts);
  EXPECT_THAT(parsed->options.tests, ElementsAre("latency"));
}

// vnetperf's grammar, and since the shared parser also --opt=value.
TEST(ParseNetCommandTest, EqualsValues) {
  const auto parsed = ParseNetCommand({"--hosts=a,b", "--datarate=128", "--duration=3", "--ports=7100",
                                       "--output-file=out.json", "--log-level=debug", "tcp-throughput"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(*parsed->options.hosts, ElementsAre("a", "b"));
  EXPECT_EQ(parsed->options.datarate, 128);
  EXPECT_EQ(parsed->options.duration, std::chrono::seconds(3));
  // vnetperf: one port means it and the next two.
  EXPECT_THAT(*parsed->options.ports, ElementsAre(7100, 7101, 7102));
  EXPECT_EQ(parsed->output_file, "out.json");
  EXPECT_EQ(parsed->log_level, "debug");
  EXPECT_THAT(parsed->options.tests, ElementsAre("tcp-throughput"));
}

TEST(ParseNetCommandTest, Errors) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--bogus"}, "unknown option \"--bogus\""},
      {{"--datarate"}, "--datarate needs a number"},
      {{"--datarate=fast"}, "--datarate needs a number"},
      {{"--hosts"}, "--hosts needs a list or a file"},
      {{"--output-file="}, "--output-file needs a file name"},
      {{"--ports=0"}, "--ports: bad port \"0\""},
      {{"--ports=65534"}, "--ports: 65534 and the next two exceed 65535"},
      {{"--log-level=loud"}, "--log-level: expected INFO, ERROR, DEBUG or WARN"},
      {{"--condense=yes"}, "--condense takes no value"},
  };
  for (const auto& [args, expected] : cases) {
    const auto parsed = ParseNetCommand(args);
    ASSERT_FALSE(parsed.ok()) << args[0];
    EXPECT_THAT(parsed.error(), HasSubstr(expected)) << args[0];
  }
  EXPECT_TRUE(ParseNetCommand({"-h"})->help);
  EXPECT_TRUE(ParseNetCommand({"--list-tests"})->list_tests);
  EXPECT_TRUE(ParseNetCommand({"--json"})->json);
  EXPECT_FALSE(ParseNetCommand({})->json);
}

// --collect-logs makes a missing --log-dir (owner-only); a path under a
// file cannot be made and is named.
TEST(ParseNetCommandTest, CollectLogsMakesAMissingLogDir) {
  char name[] = "/tmp/hostperf-logdir-XXXXXX";
  const std::string base = ::mkdtemp(name);
  const std::string logs = base + "/a/b";
  const auto made = ParseNetCommand({"--hosts", "h1", "--collect-logs", "--log-dir", logs, "latency"});
  ASSERT_TRUE(made) << made.error();
  struct stat st {};
  ASSERT_EQ(::stat(logs.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 077, 0u);
  std::FILE* file = std::fopen((base + "/file").c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fclose(file);
  const auto refused = ParseNetCommand({"--hosts", "h1", "--collect-logs", "--log-dir", base + "/file/logs"});
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error(), HasSubstr("--log-dir: cannot make the directory " + base + "/file/logs"));
  std::filesystem::remove_all(base);
}

// With no secret to reach daemons with, hosts given as SSH destinations go
// over SSH as vnetperf always does; host:port entries (responders) do not.
TEST(ParseNetCommandTest, WithoutASecretHostsAreReachedOverSsh) {
  const auto bare = ParseNetCommand({"--hosts", "db1,admin@db2", "latency"}, /*ssh_by_default=*/true);
  ASSERT_TRUE(bare) << bare.error();
  ASSERT_TRUE(bare->remote);
  EXPECT_FALSE(bare->remote->installed);
  EXPECT_THAT(bare->remote_hosts, ElementsAre("db1", "admin@db2"));
  const auto responders = ParseNetCommand({"--hosts", "db1:14159,db2:14159"}, true);
  ASSERT_TRUE(responders) << responders.error();
  EXPECT_FALSE(responders->remote);
  const auto configured = ParseNetCommand({"--hosts", "db1,db2"}, /*ssh_by_default=*/false);
  ASSERT_TRUE(configured) << configured.error();
  EXPECT_FALSE(configured->remote);
}

// vnetperf's three ports: the peers started over SSH listen on all three
// (one given means it and the next two), and the connections test's target
// sizes them.
TEST(ParseNetCommandTest, SshPeersGetThreePortsAndRoomForTheConnectionsTest) {
  const auto defaults = ParseNetCommand({"--ssh", "--hosts", "h1,h2"});
  ASSERT_TRUE(defaults) << defaults.error();
  EXPECT_THAT(defaults->remote->ports, ElementsAre(14159, 14160, 14161));
  EXPECT_EQ(defaults->remote->connections, 64u);
  const auto one = ParseNetCommand({"--ssh", "--hosts", "h1,h2", "--ports", "15000", "--max-connections", "500"});
  ASSERT_TRUE(one) << one.error();
  EXPECT_THAT(one->remote->ports, ElementsAre(15000, 15001, 15002));
  EXPECT_EQ(one->remote->connections, 500u);
  EXPECT_EQ(one->options.max_connections, 500u);
  for (const char* bad : {"0", "65536", "1.5", "many"}) {
    const auto refused = ParseNetCommand({"--hosts", "h1:1", "--max-connections", bad});
    ASSERT_FALSE(refused) << bad;
    EXPECT_THAT(refused.error(), HasSubstr("--max-connections needs a whole number from 1 to 65535"));
  }
}

// vnetperf's --vertica-install takes the install prefix when an absolute
// path follows it; bare (a test name follows) it means the package's path.
TEST(ParseNetCommandTest, VerticaInstallTakesAnInstallPrefix) {
  const auto with_dir = ParseNetCommand({"--hosts", "h1,h2", "--vertica-install", "/opt/vertica/", "latency"});
  ASSERT_TRUE(with_dir) << with_dir.error();
  ASSERT_TRUE(with_dir->remote);
  EXPECT_TRUE(with_dir->remote->installed);
  EXPECT_EQ(with_dir->remote->installed_program, "/opt/vertica/libexec/hostperf/hostperf-peer");
  EXPECT_THAT(with_dir->options.tests, ElementsAre("latency"));
  EXPECT_THAT(with_dir->remote_hosts, ElementsAre("h1", "h2"));

  const auto equals = ParseNetCommand({"--hosts", "h1", "--vertica-install=/srv/hp", "latency"});
  ASSERT_TRUE(equals) << equals.error();
  EXPECT_EQ(equals->remote->installed_program, "/srv/hp/libexec/hostperf/hostperf-peer");

  const auto bare = ParseNetCommand({"--hosts", "h1", "--vertica-install", "latency"});
  ASSERT_TRUE(bare) << bare.error();
  EXPECT_TRUE(bare->remote->installed);
  EXPECT_EQ(bare->remote->installed_program, "/usr/libexec/hostperf/hostperf-peer");
  EXPECT_THAT(bare->options.tests, ElementsAre("latency"));

  const auto shell = ParseNetCommand({"--hosts", "h1", "--vertica-install=/opt/$(reboot)"});
  ASSERT_FALSE(shell);
  EXPECT_THAT(shell.error(), HasSubstr("--vertica-install: an absolute directory"));
}

}  // namespace
}  // namespace hostperf::probes::net
