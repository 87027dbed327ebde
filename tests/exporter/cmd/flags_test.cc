#include "hostperf/cmd/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostperf::exporter {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

FlagSpec ExporterSpec() {
  FlagSpec spec;
  spec.valued = {"config.file", "web.listen-address", "web.telemetry-path", "log.level"};
  spec.boolean = {"config.check", "version"};
  return spec;
}

Result<ParsedFlags> Parse(const std::vector<std::string>& args) { return ParseFlags(args, ExporterSpec()); }

TEST(ParseFlagsTest, NoArgumentsGiveNothing) {
  const auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->values, IsEmpty());
  EXPECT_THAT(parsed->set_booleans, IsEmpty());
  EXPECT_THAT(parsed->positional, IsEmpty());
  EXPECT_EQ(parsed->Get("config.file"), std::nullopt);
  EXPECT_FALSE(parsed->Has("config.check"));
}

TEST(ParseFlagsTest, TakesValueAfterEqualsSign) {
  const auto parsed = Parse({"--web.listen-address=127.0.0.1:9580"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("web.listen-address"), "127.0.0.1:9580");
}

TEST(ParseFlagsTest, TakesValueFromTheNextArgument) {
  const auto parsed = Parse({"--config.file", "/etc/hostperf/hostperf.toml", "--log.level", "debug"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("config.file"), "/etc/hostperf/hostperf.toml");
  EXPECT_EQ(parsed->Get("log.level"), "debug");
  EXPECT_THAT(parsed->positional, IsEmpty());
}

TEST(ParseFlagsTest, KeepsEverythingAfterTheFirstEqualsSign) {
  const auto parsed = Parse({"--web.telemetry-path=/a=b"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("web.telemetry-path"), "/a=b");
}

TEST(ParseFlagsTest, EmptyValueAfterEqualsSignIsAValue) {
  const auto parsed = Parse({"--config.file="});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("config.file"), "");
}

TEST(ParseFlagsTest, LastOccurrenceOfAValuedFlagWins) {
  const auto parsed = Parse({"--log.level=info", "--log.level=error"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("log.level"), "error");
}

TEST(ParseFlagsTest, BareBooleanFlagIsSet) {
  const auto parsed = Parse({"--config.check"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->Has("config.check"));
  EXPECT_FALSE(parsed->Has("version"));
}

TEST(ParseFlagsTest, BooleanFlagTakesExplicitTrueOrFalse) {
  const auto on = Parse({"--config.check=true"});
  ASSERT_TRUE(on.ok()) << on.error();
  EXPECT_TRUE(on->Has("config.check"));

  const auto off = Parse({"--config.check=false"});
  ASSERT_TRUE(off.ok()) << off.error();
  EXPECT_FALSE(off->Has("config.check"));
}

TEST(ParseFlagsTest, BooleanFlagDoesNotConsumeTheNextArgument) {
  const auto parsed = Parse({"--config.check", "extra"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->Has("config.check"));
  EXPECT_THAT(parsed->positional, ElementsAre("extra"));
}

TEST(ParseFlagsTest, RejectsABadBooleanValue) {
  const auto parsed = Parse({"--config.check=yes"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("--config.check"));
  EXPECT_THAT(parsed.error(), HasSubstr("true or false"));
  EXPECT_THAT(parsed.error(), HasSubstr("\"yes\""));
}

TEST(ParseFlagsTest, RejectsAnUnknownFlag) {
  const auto parsed = Parse({"--web.listen-adress=:9580"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("unknown flag --web.listen-adress"));
}

TEST(ParseFlagsTest, RejectsAnUnknownFlagWithoutValue) {
  const auto parsed = Parse({"--verbose"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("unknown flag --verbose"));
}

TEST(ParseFlagsTest, RejectsAValuedFlagWithoutValue) {
  const auto parsed = Parse({"--config.check", "--config.file"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("--config.file needs a value"));
}

TEST(ParseFlagsTest, CollectsPositionalArguments) {
  const auto parsed = Parse({"/data1", "--log.level=warn", "/data2", "-", "-q"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->positional, ElementsAre("/data1", "/data2", "-", "-q"));
  EXPECT_EQ(parsed->Get("log.level"), "warn");
}

TEST(ParseFlagsTest, DoubleDashEndsFlags) {
  const auto parsed = Parse({"--config.check", "--", "--log.level=debug", "--unknown", "dir"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->Has("config.check"));
  EXPECT_EQ(parsed->Get("log.level"), std::nullopt);
  EXPECT_THAT(parsed->positional, ElementsAre("--log.level=debug", "--unknown", "dir"));
}

TEST(ParseFlagsTest, DoubleDashAtTheEndLeavesNoPositionals) {
  const auto parsed = Parse({"--"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->positional, IsEmpty());
}

}  // namespace
}  // namespace hostperf::exporter
