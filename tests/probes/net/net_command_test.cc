#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hostperf::probes::net
