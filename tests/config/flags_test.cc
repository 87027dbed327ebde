// Both styles of the one command-line grammar: every `hostperf` command's
// and hostperf_exporter's (Prometheus exporters').
#include "hostperf/base/flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace hostperf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr FlagSpec kSpecs[] = {
    Switch("help", "h?").Stopping(),       Switch("verbose", "v"), Valued("duration"),
    Valued("log-file", "", "a file name"), Valued("", "d"),
};

std::vector<std::string> Values(const ParsedFlags& parsed) {
  std::vector<std::string> out;
  for (const FlagValue& flag : parsed.flags) out.push_back(std::string(flag.spec->id()) + "=" + flag.value);
  return out;
}

// Each case's arguments refused with exactly its message.
using ErrorCase = std::pair<std::vector<std::string>, std::string>;
void ExpectErrors(const FlagGrammar& grammar, std::span<const ErrorCase> cases) {
  for (const auto& [args, expected] : cases) {
    const auto parsed = ParseFlags(args, grammar);
    ASSERT_FALSE(parsed.ok()) << args[0];
    EXPECT_EQ(parsed.error(), expected);
  }
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
  const ErrorCase cases[] = {
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
  ExpectErrors({kSpecs}, cases);
}

TEST(ParseFlagsTest, GetGivesTheLastValueAndHasSaysWhetherGiven) {
  const auto parsed = ParseFlags({"-d", "/a", "--verbose", "-d/b"}, {kSpecs});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("d"), "/b");
  EXPECT_EQ(parsed->Get("verbose"), "");
  EXPECT_EQ(parsed->Get("duration"), std::nullopt);
  EXPECT_TRUE(parsed->Has("verbose"));
  EXPECT_FALSE(parsed->Has("help"));
}

// hostperf_exporter's style.
constexpr FlagSpec kExporterSpecs[] = {
    Valued("config.file"), Valued("web.listen-address"), Valued("web.telemetry-path"),
    Valued("log.level"),   Switch("config.check"),       Switch("version"),
};

Result<ParsedFlags> Parse(const std::vector<std::string>& args) {
  return ParseFlags(args, {kExporterSpecs, false, FlagStyle::kExporter});
}

TEST(ExporterFlagsTest, NoArgumentsGiveNothing) {
  const auto parsed = Parse({});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->flags, IsEmpty());
  EXPECT_THAT(parsed->positional, IsEmpty());
  EXPECT_EQ(parsed->Get("config.file"), std::nullopt);
  EXPECT_FALSE(parsed->Has("config.check"));
}

TEST(ExporterFlagsTest, TakesValueAfterEqualsSign) {
  const auto parsed = Parse({"--web.listen-address=127.0.0.1:9580"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("web.listen-address"), "127.0.0.1:9580");
}

TEST(ExporterFlagsTest, TakesValueFromTheNextArgument) {
  const auto parsed = Parse({"--config.file", "/etc/hostperf/hostperf.toml", "--log.level", "debug"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("config.file"), "/etc/hostperf/hostperf.toml");
  EXPECT_EQ(parsed->Get("log.level"), "debug");
  EXPECT_THAT(parsed->positional, IsEmpty());
}

TEST(ExporterFlagsTest, KeepsEverythingAfterTheFirstEqualsSign) {
  const auto parsed = Parse({"--web.telemetry-path=/a=b"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("web.telemetry-path"), "/a=b");
}

TEST(ExporterFlagsTest, EmptyValueAfterEqualsSignIsAValue) {
  const auto parsed = Parse({"--config.file="});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("config.file"), "");
}

TEST(ExporterFlagsTest, LastOccurrenceOfAValuedFlagWins) {
  const auto parsed = Parse({"--log.level=info", "--log.level=error"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->Get("log.level"), "error");
}

TEST(ExporterFlagsTest, BareBooleanFlagIsSet) {
  const auto parsed = Parse({"--config.check"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->Has("config.check"));
  EXPECT_FALSE(parsed->Has("version"));
}

TEST(ExporterFlagsTest, BooleanFlagTakesExplicitTrueOrFalse) {
  const auto on = Parse({"--config.check=true"});
  ASSERT_TRUE(on.ok()) << on.error();
  EXPECT_TRUE(on->Has("config.check"));

  const auto off = Parse({"--config.check=false"});
  ASSERT_TRUE(off.ok()) << off.error();
  EXPECT_FALSE(off->Has("config.check"));
}

TEST(ExporterFlagsTest, BooleanFlagDoesNotConsumeTheNextArgument) {
  const auto parsed = Parse({"--config.check", "extra"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->Has("config.check"));
  EXPECT_THAT(parsed->positional, ElementsAre("extra"));
}

TEST(ExporterFlagsTest, RejectsABadBooleanValue) {
  const auto parsed = Parse({"--config.check=yes"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("--config.check"));
  EXPECT_THAT(parsed.error(), HasSubstr("true or false"));
  EXPECT_THAT(parsed.error(), HasSubstr("\"yes\""));
}

TEST(ExporterFlagsTest, RejectsAnUnknownFlag) {
  const auto parsed = Parse({"--web.listen-adress=:9580"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("unknown flag --web.listen-adress"));
}

TEST(ExporterFlagsTest, RejectsAnUnknownFlagWithoutValue) {
  const auto parsed = Parse({"--verbose"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("unknown flag --verbose"));
}

TEST(ExporterFlagsTest, RejectsAValuedFlagWithoutValue) {
  const auto parsed = Parse({"--config.check", "--config.file"});
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.error(), HasSubstr("--config.file needs a value"));
}

TEST(ExporterFlagsTest, CollectsPositionalArguments) {
  const auto parsed = Parse({"/data1", "--log.level=warn", "/data2", "-", "-q"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->positional, ElementsAre("/data1", "/data2", "-", "-q"));
  EXPECT_EQ(parsed->Get("log.level"), "warn");
}

TEST(ExporterFlagsTest, DoubleDashEndsFlags) {
  const auto parsed = Parse({"--config.check", "--", "--log.level=debug", "--unknown", "dir"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->Has("config.check"));
  EXPECT_EQ(parsed->Get("log.level"), std::nullopt);
  EXPECT_THAT(parsed->positional, ElementsAre("--log.level=debug", "--unknown", "dir"));
}

TEST(ExporterFlagsTest, DoubleDashAtTheEndLeavesNoPositionals) {
  const auto parsed = Parse({"--"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_THAT(parsed->positional, IsEmpty());
}

TEST(ExporterFlagsTest, OneLineErrorsSayFlag) {
  const ErrorCase cases[] = {
      {{"--bogus=1"}, "unknown flag --bogus (see --help)"},
      {{"--config.file"}, "flag --config.file needs a value"},
      {{"--version=no"}, "flag --version takes true or false, got \"no\""},
  };
  ExpectErrors({kExporterSpecs, false, FlagStyle::kExporter}, cases);
}

}  // namespace
}  // namespace hostperf
