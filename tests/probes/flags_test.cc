#include "hostperf/probes/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hostperf::probes {
namespace {

using ::testing::ElementsAre;

constexpr FlagSpec kSpecs[] = {
    Switch("help", "h?").Stopping(),       Switch("verbose", "v"), Valued("duration"),
    Valued("log-file", "", "a file name"), Valued("", "d"),
};

std::vector<std::string> Values(const ParsedFlags& parsed) {
  std::vector<std::string> out;
  for (const FlagValue& flag : parsed.flags) out.push_back(std::string(flag.spec->id()) + "=" + flag.value);
  return out;
}

TEST(ParseFlagsTest, EqualsAndSeparateValuesForEveryValuedOption) {
  const auto parsed =
      ParseFlags({"--duration=5s", "--log-file", "x.json", "-d", "/a", "-d/b", "--verbose", "-v"}, {kSpecs});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(Values(*parsed), ElementsAre("duration=5s", "log-file=x.json", "d=/a", "d=/b", "verbose=", "verbose="));
  EXPECT_EQ(parsed->flags[2].spelled, "-d");
  EXPECT_TRUE(parsed->flags[0].Is("duration"));
  EXPECT_TRUE(parsed->positional.empty());
}

TEST(ParseFlagsTest, AnEmptyOrDashedValueIsStillAValue) {
  const auto parsed = ParseFlags({"--duration=", "--log-file", "--verbose"}, {kSpecs});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(Values(*parsed), ElementsAre("duration=", "log-file=--verbose"));
}

TEST(ParseFlagsTest, CollectsPositionalArgumentsAndStopsAtDoubleDash) {
  const auto parsed = ParseFlags({"a", "--verbose", "b", "--", "--duration", "-v"}, {kSpecs});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->positional, ElementsAre("a", "b", "--duration", "-v"));
  EXPECT_THAT(Values(*parsed), ElementsAre("verbose="));
}

TEST(ParseFlagsTest, StopAtPositionalLeavesTheRestToTheCommand) {
  const auto parsed = ParseFlags({"--duration", "1s", "io", "--bogus", "x"}, {kSpecs, true});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(Values(*parsed), ElementsAre("duration=1s"));
  EXPECT_THAT(parsed->positional, ElementsAre("io", "--bogus", "x"));
}

TEST(ParseFlagsTest, AStoppingFlagEndsParsing) {
  const auto parsed = ParseFlags({"-?", "--bogus"}, {kSpecs});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(Values(*parsed), ElementsAre("help="));
}

TEST(ParseFlagsTest, OneLineErrors) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--bogus"}, "unknown option \"--bogus\""},
      {{"--bogus=1"}, "unknown option \"--bogus=1\""},
      {{"-x"}, "unknown option \"-x\""},
      {{"-"}, "unknown option \"-\""},
      {{"-vv"}, "unknown option \"-vv\""},  // no bundling
      {{"--duration"}, "--duration needs a value"},
      {{"-d"}, "-d needs a value"},
      {{"--log-file"}, "--log-file needs a file name"},
      {{"--verbose=yes"}, "--verbose takes no value"},
  };
  for (const auto& [args, expected] : cases) {
    const auto parsed = ParseFlags(args, {kSpecs});
    ASSERT_FALSE(parsed.ok()) << args[0];
    EXPECT_EQ(parsed.error(), expected);
  }
}

}  // namespace
}  // namespace hostperf::probes
