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
            "  CPU Time / this host's baseline: 1.029\n"
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

TEST(ReportTest, CalibratingBinarySaysWhereItLooked) {
  nlohmann::json result = FixedResult();
  result["expected_seconds"] = nullptr;
  result["calibration_samples"] = 0;
  result["calibration_runs"] = 5;
  result["baseline_file"] = "/var/lib/hostperf/cpu_baselines.json";
  const std::string report = FormatVcpuperfReport(result, false);
  EXPECT_NE(report.find("no baseline yet for this binary in /var/lib/hostperf/cpu_baselines.json (calibrating: 0/5 "
                        "runs)\n"),
            std::string::npos)
      << report;
}

// vcpuperf's layout: the first "Expected time on" shares the "Compiled with"
// line, the others follow one per line; other binaries' figures are only
// counted, never printed as if comparable.
TEST(ReportTest, ReferenceMachinesFollowThisHostsBaseline) {
  nlohmann::json result = FixedResult();
  result["expected_seconds"] = 8.1;
  result["baseline_ratio"] = 1.0543;
  result["reference_times"] = {{"matching",
                                {{{"cpu", "Nehalem, 2.67GHz"}, {"expected_seconds", 9.0}, {"ratio", 0.95}},
                                 {{"cpu", "Xeon 5670, 2.93GHz"}, {"expected_seconds", 8.0}, {"ratio", 1.07}}}},
                               {"other_binaries", 2}};
  const std::string report = FormatVcpuperfReport(result, false);
  EXPECT_NE(report.find("fingerprint 0123abcd0123abcd) Expected time on this host (baseline for this binary): ~8.1s\n"
                        "Expected time on Nehalem, 2.67GHz: ~9.0s\n"
                        "Expected time on Xeon 5670, 2.93GHz: ~8.0s\n"
                        "(2 configured reference times recorded with other binaries: not comparable)\n"
                        "\nThis machine's time:\n"
                        "  CPU Time: 8.540000s\n"
                        "  Real Time:8.710000s\n"
                        "  CPU Time / this host's baseline: 1.054\n"),
            std::string::npos)
      << report;
  // -q stays vcpuperf's four figures.
  EXPECT_EQ(FormatVcpuperfReport(result, true).find("Expected"), std::string::npos);
}

TEST(ReportTest, ReferenceMachineWithoutABaselineStillPrints) {
  nlohmann::json result = FixedResult();
  result["expected_seconds"] = nullptr;
  result["calibration_samples"] = 1;
  result["calibration_runs"] = 5;
  result["reference_times"] = {{"matching", {{{"cpu", "Core 2, 2.53GHz"}, {"expected_seconds", 9.5}}}},
                               {"other_binaries", 0}};
  const std::string report = FormatVcpuperfReport(result, false);
  EXPECT_EQ(report.substr(0, report.find("\n\n")),
            "Compiled with: GCC 12.2.0 (flags: -O2 -g -DNDEBUG; fingerprint 0123abcd0123abcd) "
            "Expected time on Core 2, 2.53GHz: ~9.5s\n"
            "no baseline yet for this binary (calibrating: 1/5 runs)");
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
