// The systemd unit: `cmake --install` places the unit, its defaults file and
// the config where the prefix says, and `systemd-analyze` finds the unit clean
// and hardened. The .deb built by CPack: tests/packaging/deb_test.sh.
//
// No test here needs systemd as PID 1: `systemd-analyze verify` and
// `security --offline=yes` read unit files only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr const char* kUnit = "hostperf_exporter.service";

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

// `cmake --install` of this build into `prefix`, optionally under DESTDIR.
CommandResult Install(const std::string& prefix, const std::string& destdir = "") {
  std::vector<std::string> args = {
      "DESTDIR=" + destdir, HOSTPERF_CMAKE_COMMAND, "--install", HOSTPERF_BINARY_DIR, "--prefix", prefix};
  return RunCommand("/usr/bin/env", args, seconds(120));
}

// The value of the unit's first `key=` line, or "" when there is none.
std::string UnitValue(const std::string& unit, const std::string& key) {
  std::smatch match;
  if (std::regex_search(unit, match, std::regex("(^|\n)" + key + "=([^\n]*)"))) return match[2];
  return "";
}

std::string SystemdAnalyze() {
#ifdef HOSTPERF_SYSTEMD_ANALYZE
  return HOSTPERF_SYSTEMD_ANALYZE;
#else
  return "";
#endif
}

// One install into a temporary prefix, shared by the tests that read it.
class InstalledUnit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    prefix_ = std::make_unique<TempDir>();
    install_ = std::make_unique<CommandResult>(Install(prefix_->path()));
  }
  static void TearDownTestSuite() {
    install_.reset();
    prefix_.reset();
  }
  void SetUp() override { ASSERT_EQ(install_->status, 0) << install_->out << install_->err; }

  static std::string Path(const std::string& relative) { return prefix_->path() + "/" + relative; }
  static std::string UnitPath() { return Path(std::string("lib/systemd/system/") + kUnit); }

  static inline std::unique_ptr<TempDir> prefix_;
  static inline std::unique_ptr<CommandResult> install_;
};

TEST_F(InstalledUnit, PlacesBinariesUnitDefaultsConfigAndDashboardsUnderThePrefix) {
  for (const char* file : {"bin/hostperf_exporter", "bin/hostperf", "etc/hostperf/hostperf.toml",
                           "etc/default/hostperf_exporter", "lib/systemd/system/hostperf_exporter.service",
                           "lib/sysusers.d/hostperf.conf", "share/doc/hostperf/README.md"}) {
    EXPECT_TRUE(Exists(Path(file))) << file;
  }
  EXPECT_TRUE(std::filesystem::is_directory(Path("share/hostperf"))) << "dashboards and rules directory";
  const std::string unit = ReadText(UnitPath());
  // Paths in the unit follow the install prefix.
  EXPECT_EQ(UnitValue(unit, "ExecStart"),
            Path("bin/hostperf_exporter") + " --config.file=" + Path("etc/hostperf/hostperf.toml") + " $ARGS");
  EXPECT_EQ(UnitValue(unit, "EnvironmentFile"), "-" + Path("etc/default/hostperf_exporter"));
  EXPECT_THAT(ReadText(Path("etc/default/hostperf_exporter")), HasSubstr("\nARGS=\"\"\n"));
  EXPECT_THAT(ReadText(Path("lib/sysusers.d/hostperf.conf")), HasSubstr("\nu hostperf - "));
}

TEST_F(InstalledUnit, UnitIsNotifyWithWatchdogReloadRestartAndStateDirectory) {
  const std::string unit = ReadText(UnitPath());
  EXPECT_EQ(UnitValue(unit, "Type"), "notify");
  EXPECT_FALSE(UnitValue(unit, "WatchdogSec").empty());
  EXPECT_EQ(UnitValue(unit, "ExecReload"), "kill -HUP $MAINPID");
  EXPECT_EQ(UnitValue(unit, "Restart"), "on-failure");
  EXPECT_EQ(UnitValue(unit, "User"), "hostperf");
  EXPECT_EQ(UnitValue(unit, "StateDirectory"), "hostperf");
  // The probes read /proc/stat, /proc/pressure and sysfs: no ProcSubset=pid.
  EXPECT_EQ(UnitValue(unit, "ProcSubset"), "all");
  EXPECT_EQ(UnitValue(unit, "RestrictAddressFamilies"), "AF_UNIX AF_INET AF_INET6");
}

TEST_F(InstalledUnit, SystemdAnalyzeVerifyIsClean) {
  if (SystemdAnalyze().empty()) FAIL() << "systemd-analyze not found at configure time (install Debian's systemd)";
  const auto verify = RunCommand(SystemdAnalyze(), {"verify", UnitPath()}, seconds(60));
  EXPECT_EQ(verify.status, 0) << verify.out << verify.err;
  EXPECT_EQ(verify.out + verify.err, "") << "verify should print nothing for a clean unit";
}

TEST_F(InstalledUnit, SystemdAnalyzeSecurityExposureIsAtMostTwo) {
  if (SystemdAnalyze().empty()) FAIL() << "systemd-analyze not found at configure time (install Debian's systemd)";
  const auto security =
      RunCommand(SystemdAnalyze(), {"security", "--offline=yes", "--no-pager", UnitPath()}, seconds(60));
  EXPECT_EQ(security.status, 0) << security.out << security.err;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(security.out, match,
                                std::regex(R"(Overall exposure level for hostperf_exporter\.service: (\d+\.\d+))")))
      << security.out << security.err;
  const double exposure = std::stod(match[1]);
  EXPECT_LE(exposure, 2.0) << security.out;
  EXPECT_GT(exposure, 0.0) << "a network daemon has some exposure; parsed the wrong number?";
}

// CPack's staging installs to /usr under DESTDIR: the same layout as the .deb.
TEST(InstallLayout, PrefixUsrPutsConfigInEtcAndTheUnitInSystemdsDirectory) {
  TempDir root;
  const auto install = Install("/usr", root.path());
  ASSERT_EQ(install.status, 0) << install.out << install.err;
  EXPECT_TRUE(Exists(root.path() + "/usr/bin/hostperf_exporter"));
  EXPECT_TRUE(Exists(root.path() + "/etc/hostperf/hostperf.toml"));
  EXPECT_TRUE(Exists(root.path() + "/etc/default/hostperf_exporter"));
  // The annotated example beside the docs; the conffile sets nothing.
  EXPECT_TRUE(Exists(root.path() + "/usr/share/doc/hostperf/examples/hostperf.toml"));
  EXPECT_TRUE(Exists(root.path() + "/usr/share/doc/hostperf/copyright"));
  EXPECT_THAT(ReadText(root.path() + "/etc/hostperf/hostperf.toml"),
              HasSubstr("/usr/share/doc/hostperf/examples/hostperf.toml"));
  EXPECT_FALSE(Exists(root.path() + "/usr/etc")) << "sysconfdir of prefix /usr is /etc";
  const std::string unit = ReadText(root.path() + HOSTPERF_SYSTEMD_UNIT_DIR + "/" + kUnit);
  EXPECT_EQ(UnitValue(unit, "ExecStart"), "/usr/bin/hostperf_exporter --config.file=/etc/hostperf/hostperf.toml $ARGS");
  EXPECT_EQ(UnitValue(unit, "EnvironmentFile"), "-/etc/default/hostperf_exporter");
}

// The .deb itself (build, lintian, install, upgrade, purge) is tested by
// tests/packaging/deb_test.sh (ctest deb_package, label package).

}  // namespace
}  // namespace hostperf::testing
