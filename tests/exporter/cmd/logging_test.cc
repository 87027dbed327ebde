#include "hostperf/cmd/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <string>

namespace hostperf::cmd {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

TEST(ParseLogFormatTest, AcceptsLogfmtAndJson) {
  const auto logfmt = ParseLogFormat("logfmt");
  ASSERT_TRUE(logfmt.ok()) << logfmt.error();
  EXPECT_EQ(*logfmt, LogFormat::kLogfmt);
  const auto json = ParseLogFormat("json");
  ASSERT_TRUE(json.ok()) << json.error();
  EXPECT_EQ(*json, LogFormat::kJson);
}

TEST(ParseLogFormatTest, RejectsOthersNamingTheValidFormats) {
  for (const char* text : {"", "text", "JSON", "logfmt "}) {
    const auto format = ParseLogFormat(text);
    ASSERT_FALSE(format.ok()) << '"' << text << '"';
    EXPECT_THAT(format.error(), HasSubstr("logfmt or json"));
  }
}

// Restores a quiet default logger after each test, whatever it installed.
class SetUpLoggingTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(SetUpLogging("warn", LogFormat::kLogfmt).ok()); }
};

TEST_F(SetUpLoggingTest, RejectsUnknownLevelNamingTheValidOnes) {
  const auto result = SetUpLogging("verbose", LogFormat::kLogfmt);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.error(), HasSubstr("\"verbose\""));
  EXPECT_THAT(result.error(), HasSubstr("debug, info, warn or error"));
}

TEST_F(SetUpLoggingTest, RejectsLevelsInOtherSpellings) {
  for (const char* level : {"", "INFO", "warning", "trace", "err"}) {
    EXPECT_FALSE(SetUpLogging(level, LogFormat::kJson).ok()) << '"' << level << '"';
  }
}

TEST_F(SetUpLoggingTest, AcceptsTheFourLevelsAndAppliesThem) {
  const std::pair<const char*, spdlog::level::level_enum> cases[] = {
      {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},
      {"error", spdlog::level::err},
  };
  for (const auto& [name, level] : cases) {
    for (const LogFormat format : {LogFormat::kLogfmt, LogFormat::kJson}) {
      const auto result = SetUpLogging(name, format);
      ASSERT_TRUE(result.ok()) << name << ": " << result.error();
      EXPECT_EQ(spdlog::default_logger()->level(), level) << name;
    }
  }
}

TEST_F(SetUpLoggingTest, LogfmtLinesQuoteTheMessage) {
  ASSERT_TRUE(SetUpLogging("info", LogFormat::kLogfmt).ok());
  ::testing::internal::CaptureStderr();
  spdlog::info("probe \"cpu\" failed\tnow");
  spdlog::debug("not shown at info");
  std::string output = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(output.empty());
  EXPECT_EQ(output.back(), '\n');
  output.pop_back();  // one line: the debug message is filtered out
  EXPECT_THAT(output, MatchesRegex(R"(ts=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z )"
                                   R"(level=info msg="probe \\"cpu\\" failed\\tnow")"));
}

TEST_F(SetUpLoggingTest, JsonLinesParseAsJson) {
  ASSERT_TRUE(SetUpLogging("debug", LogFormat::kJson).ok());
  ::testing::internal::CaptureStderr();
  spdlog::warn("disk {} is slow", "/data");
  const std::string output = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(output.empty());
  EXPECT_EQ(output.back(), '\n');
  const auto line = nlohmann::json::parse(output);
  EXPECT_EQ(line["level"], "warn");
  EXPECT_EQ(line["msg"], "disk /data is slow");
  EXPECT_TRUE(line["ts"].is_string());
}

TEST_F(SetUpLoggingTest, ErrorLevelHidesWarnings) {
  ASSERT_TRUE(SetUpLogging("error", LogFormat::kLogfmt).ok());
  ::testing::internal::CaptureStderr();
  spdlog::warn("hidden");
  spdlog::error("shown");
  const std::string output = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(output, Not(HasSubstr("hidden")));
  EXPECT_THAT(output, HasSubstr("level=error msg=\"shown\""));
}

}  // namespace
}  // namespace hostperf::cmd
