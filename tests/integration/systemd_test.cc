// The systemd unit and the Debian package: `cmake --install` places the unit,
// its defaults file and the config where the prefix says, `systemd-analyze`
// finds the unit clean and hardened, and the .deb built by CPack installs,
// runs and scrapes on this machine (root only: dpkg -i changes the system).
//
// No test here needs systemd as PID 1: `systemd-analyze verify` and
// `security --offline=yes` read unit files only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr const char* kUnit = "hostperf_exporter.service";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

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
  const std::string unit = ReadFile(UnitPath());
  // Paths in the unit follow the install prefix.
  EXPECT_EQ(UnitValue(unit, "ExecStart"),
            Path("bin/hostperf_exporter") + " --config.file=" + Path("etc/hostperf/hostperf.toml") + " $ARGS");
  EXPECT_EQ(UnitValue(unit, "EnvironmentFile"), "-" + Path("etc/default/hostperf_exporter"));
  EXPECT_THAT(ReadFile(Path("etc/default/hostperf_exporter")), HasSubstr("\nARGS=\"\"\n"));
  EXPECT_THAT(ReadFile(Path("lib/sysusers.d/hostperf.conf")), HasSubstr("\nu hostperf - "));
}

TEST_F(InstalledUnit, UnitIsNotifyWithWatchdogReloadRestartAndStateDirectory) {
  const std::string unit = ReadFile(UnitPath());
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
  EXPECT_FALSE(Exists(root.path() + "/usr/etc")) << "sysconfdir of prefix /usr is /etc";
  const std::string unit = ReadFile(root.path() + HOSTPERF_SYSTEMD_UNIT_DIR + "/" + kUnit);
  EXPECT_EQ(UnitValue(unit, "ExecStart"), "/usr/bin/hostperf_exporter --config.file=/etc/hostperf/hostperf.toml $ARGS");
  EXPECT_EQ(UnitValue(unit, "EnvironmentFile"), "-/etc/default/hostperf_exporter");
}

bool PackageInstalled(const std::string& name) {
  const auto query = RunCommand("/usr/bin/dpkg-query", {"-W", "-f=${Status}", name}, seconds(30));
  return query.status == 0 && query.out.find("install ok installed") != std::string::npos;
}

constexpr const char* kStateDirectory = "/var/lib/hostperf";
constexpr const char* kWantsLink = "/etc/systemd/system/multi-user.target.wants/hostperf_exporter.service";

// Purges the package, whatever happens in between, and puts back what the
// test found: no service user if there was none, the (empty) state directory
// if there was one.
class PackageCleanup {
 public:
  PackageCleanup()
      : user_existed_(RunCommand("/usr/bin/getent", {"passwd", "hostperf"}, seconds(30)).status == 0),
        state_directory_existed_(Exists(kStateDirectory)) {}
  ~PackageCleanup() {
    const auto purge = RunCommand("/usr/bin/dpkg", {"--purge", "hostperf"}, seconds(120));
    EXPECT_EQ(purge.status, 0) << purge.out << purge.err;
    if (!user_existed_) RunCommand("/usr/sbin/userdel", {"hostperf"}, seconds(30));
    std::error_code ec;
    if (state_directory_existed_) std::filesystem::create_directories(kStateDirectory, ec);
  }
  PackageCleanup(const PackageCleanup&) = delete;
  PackageCleanup& operator=(const PackageCleanup&) = delete;

 private:
  bool user_existed_;
  bool state_directory_existed_;
};

TEST(DebPackage, BuildsInstallsRunsScrapesAndPurges) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: this test installs the .deb with dpkg -i and purges it after";
  if (PackageInstalled("hostperf")) {
    GTEST_SKIP() << "a hostperf package is already installed on this machine; not replacing it";
  }
  std::error_code ec;
  if (Exists(kStateDirectory) && !std::filesystem::is_empty(kStateDirectory, ec)) {
    GTEST_SKIP() << kStateDirectory << " holds data that purging the package would delete; not touching it";
  }
  TempDir dir;
  const auto cpack = RunCommand(
      HOSTPERF_CPACK_COMMAND,
      {"-G", "DEB", "--config", std::string(HOSTPERF_BINARY_DIR) + "/CPackConfig.cmake", "-B", dir.path() + "/package"},
      seconds(300));
  ASSERT_EQ(cpack.status, 0) << cpack.out << cpack.err;
  std::string deb;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() + "/package")) {
    if (entry.path().extension() == ".deb") deb = entry.path();
  }
  ASSERT_FALSE(deb.empty()) << cpack.out;

  const auto fields = RunCommand("/usr/bin/dpkg-deb", {"--field", deb, "Package", "Depends"}, seconds(30));
  ASSERT_EQ(fields.status, 0) << fields.err;
  EXPECT_THAT(fields.out, HasSubstr("Package: hostperf\n"));
  EXPECT_THAT(fields.out, HasSubstr("libc6")) << "dependencies come from dpkg-shlibdeps";
  const auto conffiles = RunCommand("/usr/bin/dpkg-deb", {"--info", deb, "conffiles"}, seconds(30));
  EXPECT_THAT(conffiles.out, HasSubstr("/etc/hostperf/hostperf.toml"));
  EXPECT_THAT(conffiles.out, HasSubstr("/etc/default/hostperf_exporter"));

  PackageCleanup cleanup;
  // Without systemd as PID 1 (containers, this CI) postinst must still succeed.
  const auto install = RunCommand("/usr/bin/dpkg", {"-i", deb}, seconds(300));
  ASSERT_EQ(install.status, 0) << install.out << install.err;
  EXPECT_TRUE(PackageInstalled("hostperf"));
  EXPECT_EQ(RunCommand("/usr/bin/getent", {"passwd", "hostperf"}, seconds(30)).status, 0) << "service user";
  EXPECT_TRUE(Exists(std::string(HOSTPERF_SYSTEMD_UNIT_DIR) + "/" + kUnit));
  // Enabled for the next boot even where systemd is not running (deb-systemd-helper, from init-system-helpers).
  const bool have_helper = Exists("/usr/bin/deb-systemd-helper");
  if (have_helper) {
    EXPECT_TRUE(std::filesystem::is_symlink(kWantsLink)) << install.out;
  }
  if (Exists("/run/systemd/system")) {
    // A machine booted with systemd: postinst started the hardened unit.
    const auto active = RunCommand("/usr/bin/systemctl", {"is-active", kUnit}, seconds(30));
    EXPECT_EQ(active.out, "active\n") << RunCommand("/usr/bin/journalctl", {"-u", kUnit, "-n", "50"}, seconds(30)).out;
  }
  // Stands in for baselines a service run would have left behind.
  std::filesystem::create_directories(kStateDirectory);
  std::ofstream(std::string(kStateDirectory) + "/cpu_baselines.json") << "{}\n";

  const auto version = RunCommand("/usr/bin/hostperf", {"--version"}, seconds(30));
  EXPECT_EQ(version.status, 0) << version.err;
  {
    ChildProcess exporter("/usr/bin/hostperf_exporter",
                          {"--config.file=/etc/hostperf/hostperf.toml", "--web.listen-address=127.0.0.1:0"},
                          {{"STATE_DIRECTORY", dir.path() + "/state"}});
    ASSERT_TRUE(exporter.WaitForStderr("(port ", seconds(30))) << exporter.Stderr();
    std::smatch match;
    const std::string log = exporter.Stderr();
    ASSERT_TRUE(std::regex_search(log, match, std::regex(R"(\(port (\d+)\))"))) << log;
    const auto reply = HttpRequest(std::stoi(match[1]), "GET", "/metrics");
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, 200);
    EXPECT_THAT(reply->body, HasSubstr("\nhostperf_build_info{"));
    exporter.Signal(SIGTERM);
    EXPECT_EQ(exporter.Wait(seconds(30)), 0) << exporter.Stderr();
    EXPECT_TRUE(Exists(dir.path() + "/state")) << "used $STATE_DIRECTORY";
  }

  const auto remove = RunCommand("/usr/bin/dpkg", {"--remove", "hostperf"}, seconds(120));
  ASSERT_EQ(remove.status, 0) << remove.out << remove.err;
  EXPECT_FALSE(Exists("/usr/bin/hostperf_exporter"));
  if (have_helper) {
    EXPECT_TRUE(std::filesystem::is_symlink(std::string("/etc/systemd/system/") + kUnit)) << "masked";
  }
  EXPECT_TRUE(Exists("/etc/hostperf/hostperf.toml")) << "remove keeps conffiles; purge deletes them";
  EXPECT_TRUE(Exists(std::string(kStateDirectory) + "/cpu_baselines.json")) << "remove keeps the state directory";
  const auto purge = RunCommand("/usr/bin/dpkg", {"--purge", "hostperf"}, seconds(120));
  ASSERT_EQ(purge.status, 0) << purge.out << purge.err;
  EXPECT_FALSE(Exists("/etc/hostperf/hostperf.toml"));
  EXPECT_FALSE(Exists("/etc/default/hostperf_exporter"));
  EXPECT_FALSE(Exists(kStateDirectory)) << "purge deletes the state directory";
  EXPECT_FALSE(std::filesystem::is_symlink(kWantsLink)) << "purge forgets the enabled state";
  EXPECT_FALSE(std::filesystem::is_symlink(std::string("/etc/systemd/system/") + kUnit)) << "purge unmasks";
}

}  // namespace
}  // namespace hostperf::testing
