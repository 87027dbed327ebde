#include "hostperf/config/units.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace hostperf::config {
namespace {

using namespace std::chrono_literals;

struct DurationCase {
  std::string text;
  Duration expected;
};

TEST(ParseDurationTest, AcceptsEverySuffixCaseAndSpacing) {
  const std::vector<DurationCase> cases = {
      // Bare numbers are seconds.
      {"0", 0s},
      {"30", 30s},
      {"007", 7s},
      // Seconds.
      {"60s", 60s},
      {"60sec", 60s},
      {"60secs", 60s},
      {"60second", 60s},
      {"60seconds", 60s},
      // Minutes ("m" is minutes for durations).
      {"10m", 10min},
      {"10min", 10min},
      {"10mins", 10min},
      {"10minute", 10min},
      {"10minutes", 10min},
      // Hours.
      {"1h", 1h},
      {"1hr", 1h},
      {"1hrs", 1h},
      {"1hour", 1h},
      {"2hours", 2h},
      // Sub-second.
      {"250ms", 250ms},
      {"70us", 70us},
      // Case-insensitive, optional space (and surrounding blanks).
      {"5MIN", 5min},
      {"5Min", 5min},
      {"3 Hours", 3h},
      {"10 s", 10s},
      {"10\tms", 10ms},
      {"  45s  ", 45s},
      {"1HR", 1h},
      // Decimals.
      {"1.5h", 90min},
      {"0.5s", 500ms},
      {"2.5", 2500ms},
      {"0.25 min", 15s},
      {"1.5us", 1500ns},
      {"0.001us", 1ns},
      {"1.000000000s", 1s},
      // Fractions finer than 1ns round to the nearest nanosecond.
      {"0.0004us", 0ns},
      {"0.0005us", 1ns},
      {"1.0000000005s", 1000000001ns},
      {"0.333333333333333333333333333h", 1200000000000ns},
      // Largest value that fits.
      {"9223372036.854775807", Duration(std::numeric_limits<Duration::rep>::max())},
      {"2562047h", 2562047h},
  };
  for (const auto& c : cases) {
    const auto parsed = ParseDuration(c.text);
    ASSERT_TRUE(parsed.ok()) << "\"" << c.text << "\": " << parsed.error();
    EXPECT_EQ(parsed->count(), c.expected.count()) << "\"" << c.text << "\"";
  }
}

struct ErrorCase {
  std::string text;
  std::string message;
};

TEST(ParseDurationTest, RejectsBadInputWithMessageQuotingIt) {
  const std::vector<ErrorCase> cases = {
      {"", R"(invalid duration "": empty)"},
      {"   ", R"(invalid duration "   ": empty)"},
      {"-5s", R"(invalid duration "-5s": negative durations are not allowed)"},
      {"-0", R"(invalid duration "-0": negative durations are not allowed)"},
      {"abc", R"(invalid duration "abc": expected a number with an optional unit, like "5min")"},
      {"min", R"(invalid duration "min": expected a number with an optional unit, like "5min")"},
      {".5s", R"(invalid duration ".5s": expected a number with an optional unit, like "5min")"},
      {"+5s", R"(invalid duration "+5s": expected a number with an optional unit, like "5min")"},
      {"10 parsecs", R"(invalid duration "10 parsecs": unknown unit "parsecs" (use s, min, h, ms, us))"},
      {"5ns", R"(invalid duration "5ns": unknown unit "ns" (use s, min, h, ms, us))"},
      {"5d", R"(invalid duration "5d": unknown unit "d" (use s, min, h, ms, us))"},
      {"5mb", R"(invalid duration "5mb": unknown unit "mb" (use s, min, h, ms, us))"},
      {"5 s s", R"(invalid duration "5 s s": unknown unit "s s" (use s, min, h, ms, us))"},
      {"5s5", R"(invalid duration "5s5": unknown unit "s5" (use s, min, h, ms, us))"},
      {"1e3s", R"(invalid duration "1e3s": unknown unit "e3s" (use s, min, h, ms, us))"},
      {"1.2.3s", R"(invalid duration "1.2.3s": malformed number)"},
      {"5.s", R"(invalid duration "5.s": malformed number)"},
      {"5.", R"(invalid duration "5.": malformed number)"},
      {"1,5s", R"(invalid duration "1,5s": malformed number)"},
      // Overflow of the int64 nanosecond count, and of 64 bits outright.
      {"2562048h", R"(invalid duration "2562048h": too large (the maximum is about 2562047h))"},
      {"9223372036.854775808", R"(invalid duration "9223372036.854775808": too large (the maximum is about 2562047h))"},
      {"99999999999999999999999999999s",
       R"(invalid duration "99999999999999999999999999999s": too large (the maximum is about 2562047h))"},
  };
  for (const auto& c : cases) {
    const auto parsed = ParseDuration(c.text);
    ASSERT_FALSE(parsed.ok()) << "\"" << c.text << "\" parsed as " << parsed->count() << "ns";
    EXPECT_EQ(parsed.error(), c.message);
  }
}

struct SizeCase {
  std::string text;
  std::uint64_t expected;
};

constexpr std::uint64_t kKb = 1024;
constexpr std::uint64_t kMb = 1024 * kKb;
constexpr std::uint64_t kGb = 1024 * kMb;
constexpr std::uint64_t kTb = 1024 * kGb;

TEST(ParseSizeTest, AcceptsEverySuffixCaseAndSpacing) {
  const std::vector<SizeCase> cases = {
      {"0", 0},
      {"4096", 4096},
      {"10b", 10},
      {"10byte", 10},
      {"10bytes", 10},
      {"4k", 4 * kKb},
      {"4kb", 4 * kKb},
      {"4kilobyte", 4 * kKb},
      {"4kilobytes", 4 * kKb},
      // "m" is megabytes for sizes.
      {"64m", 64 * kMb},
      {"64mb", 64 * kMb},
      {"64megabyte", 64 * kMb},
      {"64megabytes", 64 * kMb},
      {"2g", 2 * kGb},
      {"2gb", 2 * kGb},
      {"2gigabyte", 2 * kGb},
      {"2gigabytes", 2 * kGb},
      {"1t", kTb},
      {"1tb", kTb},
      {"1terabyte", kTb},
      {"3terabytes", 3 * kTb},
      {"64MB", 64 * kMb},
      {"64 Mb", 64 * kMb},
      {"2 GigaBytes", 2 * kGb},
      {" 1K ", kKb},
      {"1.5kb", 1536},
      {"0.5gb", 512 * kMb},
      {"0.1kb", 102},  // 102.4 rounds to the nearest byte
      {"16777215tb", 16777215 * kTb},
      {"18446744073709551615", std::numeric_limits<std::uint64_t>::max()},
      {"18446744073709551615b", std::numeric_limits<std::uint64_t>::max()},
  };
  for (const auto& c : cases) {
    const auto parsed = ParseSize(c.text);
    ASSERT_TRUE(parsed.ok()) << "\"" << c.text << "\": " << parsed.error();
    EXPECT_EQ(*parsed, c.expected) << "\"" << c.text << "\"";
  }
}

TEST(ParseSizeTest, RejectsBadInputWithMessageQuotingIt) {
  const std::vector<ErrorCase> cases = {
      {"", R"(invalid size "": empty)"},
      {"-1kb", R"(invalid size "-1kb": negative sizes are not allowed)"},
      {"kb", R"(invalid size "kb": expected a number with an optional unit, like "64mb")"},
      {"lots", R"(invalid size "lots": expected a number with an optional unit, like "64mb")"},
      {"10 parsecs", R"(invalid size "10 parsecs": unknown unit "parsecs" (use b, kb, mb, gb, tb))"},
      {"1pb", R"(invalid size "1pb": unknown unit "pb" (use b, kb, mb, gb, tb))"},
      {"1kib", R"(invalid size "1kib": unknown unit "kib" (use b, kb, mb, gb, tb))"},
      {"5min", R"(invalid size "5min": unknown unit "min" (use b, kb, mb, gb, tb))"},
      {"1..5kb", R"(invalid size "1..5kb": malformed number)"},
      {"18446744073709551616",
       R"(invalid size "18446744073709551616": too large (the maximum is 18446744073709551615 bytes))"},
      {"16777216tb", R"(invalid size "16777216tb": too large (the maximum is 18446744073709551615 bytes))"},
      {"99999999999999999999999999gb",
       R"(invalid size "99999999999999999999999999gb": too large (the maximum is 18446744073709551615 bytes))"},
  };
  for (const auto& c : cases) {
    const auto parsed = ParseSize(c.text);
    ASSERT_FALSE(parsed.ok()) << "\"" << c.text << "\" parsed as " << *parsed;
    EXPECT_EQ(parsed.error(), c.message);
  }
}

TEST(FormatDurationTest, UsesLargestExactUnit) {
  EXPECT_EQ(FormatDuration(0s), "0s");
  EXPECT_EQ(FormatDuration(5min), "5min");
  EXPECT_EQ(FormatDuration(1h), "1h");
  EXPECT_EQ(FormatDuration(250ms), "250ms");
  EXPECT_EQ(FormatDuration(30s), "30s");
  EXPECT_EQ(FormatDuration(90s), "90s");
  EXPECT_EQ(FormatDuration(90min), "90min");
  EXPECT_EQ(FormatDuration(25h), "25h");
  EXPECT_EQ(FormatDuration(1500ms), "1500ms");
  EXPECT_EQ(FormatDuration(70us), "70us");
  // Below a microsecond there is no unit, so decimals of "us" keep it exact.
  EXPECT_EQ(FormatDuration(1500ns), "1.5us");
  EXPECT_EQ(FormatDuration(1ns), "0.001us");
  EXPECT_EQ(FormatDuration(1h + 1ns), "3600000000.001us");
  EXPECT_EQ(FormatDuration(-5s), "-5s");
}

TEST(FormatSizeTest, UsesLargestExactUnit) {
  EXPECT_EQ(FormatSize(0), "0b");
  EXPECT_EQ(FormatSize(1), "1b");
  EXPECT_EQ(FormatSize(1023), "1023b");
  EXPECT_EQ(FormatSize(kKb), "1kb");
  EXPECT_EQ(FormatSize(1536 * kKb), "1536kb");
  EXPECT_EQ(FormatSize(64 * kMb), "64mb");
  EXPECT_EQ(FormatSize(2 * kGb), "2gb");
  EXPECT_EQ(FormatSize(kTb), "1tb");
  EXPECT_EQ(FormatSize(1024 * kTb), "1024tb");
  EXPECT_EQ(FormatSize(std::numeric_limits<std::uint64_t>::max()), "18446744073709551615b");
}

TEST(FormatTest, RoundTripsExactly) {
  std::vector<Duration> durations = {0ns,   1ns, 999ns,    1us,
                                     1ms,   1s,  59s,      1min,
                                     61min, 1h,  1h + 1ns, Duration(std::numeric_limits<Duration::rep>::max())};
  std::vector<std::uint64_t> sizes = {0,       1,   1023, 1024,          1025,
                                      kMb + 1, kGb, kTb,  3 * kTb + kKb, std::numeric_limits<std::uint64_t>::max()};
  std::mt19937_64 random(20240601);
  for (int i = 0; i < 2000; ++i) {
    // Mix values with many trailing zero bits (typical) and arbitrary ones.
    const std::uint64_t raw = random() >> (random() % 64);
    const int shift = static_cast<int>(random() % 40);
    const std::uint64_t value = raw << shift >> shift == raw ? raw << shift : raw;
    sizes.push_back(value);
    durations.push_back(Duration(static_cast<Duration::rep>(value >> 1)));
  }
  for (const Duration d : durations) {
    const std::string text = FormatDuration(d);
    const auto parsed = ParseDuration(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error();
    EXPECT_EQ(parsed->count(), d.count()) << text;
  }
  for (const std::uint64_t s : sizes) {
    const std::string text = FormatSize(s);
    const auto parsed = ParseSize(text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.error();
    EXPECT_EQ(*parsed, s) << text;
  }
}

}  // namespace
}  // namespace hostperf::config
