#include <gtest/gtest.h>

#include "hostperf/probes/disk/options.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

TEST(DiskOptionsTest, DefaultsAreVioperfs) {
  const auto parsed = ParseFullRunOptions(nullptr);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->duration, 5min);
  EXPECT_EQ(parsed->log_interval, 10s);
  EXPECT_EQ(parsed->thread_count, 0u);
  EXPECT_EQ(parsed->data_size, 4608ULL << 20);
  EXPECT_FALSE(parsed->max_buffer_size.has_value());
  EXPECT_FALSE(parsed->preserve_files);
}

TEST(DiskOptionsTest, VioperfCommandLine) {
  const auto parsed = ParseIoCommand({"--duration=60sec", "--log-interval", "2s", "--log-file=/tmp/x.json",
                                      "--condense-log", "--thread-count=3", "--max-buffer-size=256kb",
                                      "--preserve-files", "--disable-crc", "--disable-direct-io", "--debug",
                                      "--data-size=8mb", "--files-per-thread=2", "/data/1", "/data/2"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->log_file, "/tmp/x.json");
  EXPECT_TRUE(parsed->condense_log);
  const FullRunOptions* options = &parsed->options;
  EXPECT_EQ(options->duration, 60s);
  EXPECT_EQ(options->log_interval, 2s);
  EXPECT_EQ(options->thread_count, 3u);
  EXPECT_EQ(options->max_buffer_size, 256u * 1024);
  EXPECT_EQ(options->data_size, 8u << 20);
  EXPECT_EQ(options->files_per_thread, 2u);
  EXPECT_TRUE(options->preserve_files);
  EXPECT_EQ(options->disable_crc, true);
  EXPECT_EQ(options->disable_direct_io, true);
  EXPECT_TRUE(options->debug);
  EXPECT_EQ(options->directories, (std::vector<std::string>{"/data/1", "/data/2"}));
}

TEST(DiskOptionsTest, IntervalAndSizeSuffixes) {
  const std::pair<const char*, std::chrono::nanoseconds> intervals[] = {
      {"60s", 60s},     {"60sec", 60s},  {"2secs", 2s},     {"1second", 1s}, {"10m", 10min},
      {"10min", 10min}, {"1mins", 1min}, {"1minute", 1min}, {"1hrs", 1h},    {"1h", 1h},
      {"2hours", 2h},   {"1hour", 1h},   {"1hr", 1h},       {"30", 30s}};
  for (const auto& [text, expected] : intervals) {
    const auto parsed = ParseFullRunOptions(json{{"duration", text}});
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error();
    EXPECT_EQ(parsed->duration, expected) << text;
  }
  const std::pair<const char*, std::uint64_t> sizes[] = {
      {"4096b", 4096},         {"8192byte", 8192},      {"8192bytes", 8192}, {"64k", 64 << 10},
      {"64kb", 64 << 10},      {"8kilobytes", 8 << 10}, {"1m", 1 << 20},     {"1mb", 1 << 20},
      {"2megabytes", 2 << 20}, {"1g", 1ULL << 30},      {"1gb", 1ULL << 30}, {"1gigabyte", 1ULL << 30}};
  for (const auto& [text, expected] : sizes) {
    const auto parsed = ParseFullRunOptions(json{{"data_size", text}});
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error();
    EXPECT_EQ(parsed->data_size, expected) << text;
  }
}

TEST(DiskOptionsTest, BadInputGetsClearErrors) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--duration=5 fortnights"}, "duration"},
      {{"--duration=0s"}, "duration: must be greater than 0"},
      {{"--log-interval="}, "log_interval"},
      {{"--thread-count=0"}, "thread_count: 0 is out of range"},
      {{"--thread-count=two"}, "thread_count: \"two\" is not a whole number"},
      {{"--max-buffer-size=100b"}, "max_buffer_size: 100b is out of range"},
      {{"--max-buffer-size=1tb"}, "max_buffer_size"},
      {{"--data-size=1b"}, "data_size: must be at least 4kb"},
      {{"--disable-crc=yes"}, "--disable-crc takes no value"},
      {{"--bogus"}, "unknown option \"--bogus\""},
      {{"--duration"}, "--duration needs a value"},
      {{"--log-file="}, "--log-file needs a file name"},
  };
  for (const auto& [args, expected] : cases) {
    const auto parsed = ParseIoCommand(args);
    ASSERT_FALSE(parsed.ok()) << args[0];
    EXPECT_NE(parsed.error().find(expected), std::string::npos) << args[0] << " -> " << parsed.error();
  }
  EXPECT_FALSE(ParseFullRunOptions(json{{"nope", 1}}).ok());
  EXPECT_FALSE(ParseFullRunOptions(json{{"directories", {""}}}).ok());
  EXPECT_FALSE(ParseFullRunOptions(json{{"directories", "/data"}}).ok());
  EXPECT_FALSE(ParseFullRunOptions(json{{"disable_crc", "true"}}).ok());
  EXPECT_FALSE(ParseFullRunOptions(json::array()).ok());
}

TEST(DiskOptionsTest, HelpAndDirectoriesAfterDoubleDash) {
  EXPECT_TRUE(ParseIoCommand({"--help"})->help);
  EXPECT_TRUE(ParseIoCommand({"--json", "/d"})->json);
  EXPECT_FALSE(ParseIoCommand({"/d"})->json);
  const auto parsed = ParseIoCommand({"--", "--odd-dir-name"});
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->options.directories, std::vector<std::string>{"--odd-dir-name"});
}

}  // namespace
}  // namespace hostperf::probes::disk
