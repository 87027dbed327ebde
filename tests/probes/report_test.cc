#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "hostperf/probes/cpu/cpu_probe.h"

namespace hostperf::probes::cpu {
namespace {

nlohmann::json FixedResult() {
  return {
      {"mode", "full"},
      {"fingerprint", "0123abcd0123abcd"},
      {"compiler", "GNU"},
      {"compiler_version", "12.2.0"},
      {"build_flags", "-O2 -g -DNDEBUG"},
      {"chunks", 120000},
      {"checksum", "7a3387e57dd67908"},
      {"checksum_ok", true},
      {"cpu_seconds", 8.54},
      {"real_seconds", 8.71},
      {"expected_seconds", 8.3},
      {"baseline_ratio", 8.54 / 8.3},
      {"high_load_median_seconds", 67.2e-6},
      {"low_load_median_seconds", 208.4e-6},
      {"throttle_ratio", 208.4 / 67.2},
      {"samples_per_load", 1000},
  };
}

TEST(ReportTest, FullReport) {
  EXPECT_EQ(FormatVcpuperfReport(FixedResult(), false),
            "Compiled with: GCC 12.2.0 (flags: -O2 -g -DNDEBUG; fingerprint 0123abcd0123abcd) "
            "Expected time on this host (baseline for this binary): ~8.3s\n"
            "\n"
            "This machine's time:\n"
            "  CPU Time: 8.540000s\n"
            "  Real Time:8.710000s\n"
            "\n"
            "Some machines automatically throttle the CPU to save power.\n"
            "  This test can be done in <100 microseconds on modern CPUs.\n"
            "  Low load times much larger than 100-200us or much larger than the corresponding "
            "high load time\n"
            "    indicate low-load throttling, which can adversely affect small query / "
            "concurrent performance.\n"
            "\n"
            "This machine's high load time: 67 microseconds.\n"
            "This machine's low load time: 208 microseconds.\n");
}

TEST(ReportTest, QuietReportHasOnlyTheFourFigures) {
  EXPECT_EQ(FormatVcpuperfReport(FixedResult(), true),
            "  CPU Time: 8.540000s\n"
            "  Real Time:8.710000s\n"
            "This machine's high load time: 67 microseconds.\n"
            "This machine's low load time: 208 microseconds.\n");
}

TEST(ReportTest, CalibratingBinaryHasNoExpectedTime) {
  nlohmann::json result = FixedResult();
  result["compiler"] = "Clang";
  result["compiler_version"] = "14.0.6";
  result["expected_seconds"] = nullptr;
  result["calibration_samples"] = 2;
  result["calibration_runs"] = 5;
  const std::string report = FormatVcpuperfReport(result, false);
  EXPECT_EQ(report.substr(0, report.find('\n')),
            "Compiled with: Clang 14.0.6 (flags: -O2 -g -DNDEBUG; fingerprint 0123abcd0123abcd) "
            "no baseline yet for this binary (calibrating: 2/5 runs)");
}

TEST(ReportTest, ShortScheduledBaselineKeepsMilliseconds) {
  nlohmann::json result = FixedResult();
  result["expected_seconds"] = 0.0523;
  const std::string report = FormatVcpuperfReport(result, false);
  EXPECT_NE(report.find("(baseline for this binary): ~0.052s\n"), std::string::npos) << report;
}

TEST(ReportTest, MissingFieldsNeverThrow) {
  EXPECT_EQ(FormatVcpuperfReport(nlohmann::json::object(), true),
            "  CPU Time: n/a\n"
            "  Real Time:n/a\n"
            "This machine's high load time: n/a.\n"
            "This machine's low load time: n/a.\n");
  EXPECT_NO_THROW(FormatVcpuperfReport(nlohmann::json::array(), false));
  EXPECT_NO_THROW(FormatVcpuperfReport(nullptr, false));
}

}  // namespace
}  // namespace hostperf::probes::cpu
