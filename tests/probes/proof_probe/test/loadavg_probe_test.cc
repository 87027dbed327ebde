// The load average probe against a proc root of the test's own: what it
// reads, what each face does with it, its config section, figures and
// command.
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/config/config.h"
#include "hostperf/probes/loadavg/module.h"
#include "probe_test_util.h"
#include "temp_dir.h"

namespace hostperf::probes::loadavg {
namespace {

using nlohmann::json;
using test_support::FindSeries;

constexpr const char* kStat4Cpus =
    "cpu  100 0 100 1000 0 0 0 0 0 0\ncpu0 25 0 25 250 0 0 0 0 0 0\ncpu1 25 0 25 250 0 0 0 0 0 0\n"
    "cpu2 25 0 25 250 0 0 0 0 0 0\ncpu3 25 0 25 250 0 0 0 0 0 0\nintr 0\nctxt 0\n";

// A proc root: loadavg, stat with four CPUs, and PSI for cpu and io.
class ProcRoot {
 public:
  ProcRoot() {
    Write("loadavg", "6.00 3.50 1.25 3/412 98765\n");
    Write("stat", kStat4Cpus);
    Write("pressure/cpu",
          "some avg10=12.50 avg60=3.00 avg300=1.00 total=123\nfull avg10=0.00 avg60=0.00 "
          "avg300=0.00 total=0\n");
    Write("pressure/io",
          "some avg10=0.40 avg60=0.10 avg300=0.00 total=5\nfull avg10=0.20 avg60=0.00 avg300=0.00 "
          "total=2\n");
  }
  void Write(const std::string& name, const std::string& text) const {
    std::filesystem::create_directories((dir_.path() / name).parent_path());
    std::ofstream(dir_.path() / name) << text;
  }
  void Remove(const std::string& name) const { std::filesystem::remove_all(dir_.path() / name); }
  const std::filesystem::path& path() const { return dir_.path(); }

 private:
  test_support::TempDir dir_;
};

std::optional<double> Value(prometheus::Registry& registry, const std::string& family,
                            const std::vector<prometheus::ClientMetric::Label>& labels = {}) {
  const auto series = FindSeries(registry.Collect(), family, labels);
  if (!series) return std::nullopt;
  return series->gauge.value;
}

config::Config ConfigFrom(const std::string& toml) {
  auto loaded = LoadConfigString(toml, "test.toml");
  EXPECT_TRUE(loaded) << loaded.error();
  return loaded ? *loaded : DefaultConfig();
}

struct Fixture {
  Fixture() {
    ProbeDeps deps;
    deps.registry = &registry;
    deps.roots.proc = proc.path();
    probe = CreateLoadavgProbe(deps);
  }
  ProbeOutcome Scheduled(const config::Config& config = DefaultConfig()) {
    return probe->RunScheduled(MakeScheduledContext(config, "loadavg"));
  }
  ProbeOutcome Full(std::vector<json>* reports = nullptr) {
    FullRunContext context = MakeFullRunContext(DefaultConfig(), "loadavg");
    if (reports != nullptr) context.on_report = [reports](const json& row) { reports->push_back(row); };
    return probe->RunFull(context);
  }
  ProcRoot proc;
  prometheus::Registry registry;
  std::unique_ptr<Probe> probe;
};

TEST(LoadavgReadTest, ReadsLoadCpusAndPressure) {
  ProcRoot proc;
  const auto sample = ReadLoadSample(proc.path(), true);
  ASSERT_TRUE(sample) << sample.error();
  EXPECT_DOUBLE_EQ(sample->load1, 6.0);
  EXPECT_DOUBLE_EQ(sample->load5, 3.5);
  EXPECT_DOUBLE_EQ(sample->load15, 1.25);
  EXPECT_EQ(sample->runnable, 3);
  EXPECT_EQ(sample->tasks, 412);
  EXPECT_EQ(sample->cpus, 4);
  EXPECT_DOUBLE_EQ(sample->Load1PerCpu(), 1.5);
  EXPECT_EQ(sample->pressure, (std::map<std::string, double>{{"cpu", 0.125}, {"io", 0.004}}));
}

TEST(LoadavgReadTest, PressureIsReadOnlyWhereItExistsAndWhenAsked) {
  ProcRoot proc;
  EXPECT_TRUE(ReadLoadSample(proc.path(), false)->pressure.empty());
  proc.Remove("pressure");
  const auto sample = ReadLoadSample(proc.path(), true);
  ASSERT_TRUE(sample) << sample.error();
  EXPECT_TRUE(sample->pressure.empty());
}

TEST(LoadavgReadTest, AnUnreadableOrMalformedProcFailsWithItsReason) {
  ProcRoot proc;
  proc.Write("loadavg", "not a load average\n");
  EXPECT_EQ(ReadLoadSample(proc.path(), true).reason(), "proc_unreadable");
  proc.Remove("loadavg");
  EXPECT_EQ(ReadLoadSample(proc.path(), true).reason(), "proc_unreadable");
  proc.Write("loadavg", "0.10 0.20 0.30 1/100 42\n");
  proc.Write("stat", "cpu  1 2 3\nintr 0\n");  // no cpuN line
  EXPECT_EQ(ReadLoadSample(proc.path(), true).reason(), "proc_unreadable");
}

TEST(LoadavgProbeTest, TheScheduledFacePublishesGauges) {
  Fixture f;
  const ProbeOutcome outcome = f.Scheduled();
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["load1_per_cpu"], 1.5);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_load", {{"window", "1m"}}), 6.0);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_load", {{"window", "5m"}}), 3.5);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_load", {{"window", "15m"}}), 1.25);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_load_per_cpu"), 1.5);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_runnable_tasks"), 3.0);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_pressure_some_ratio", {{"resource", "cpu"}}), 0.125);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_pressure_some_ratio", {{"resource", "io"}}), 0.004);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_pressure_some_ratio", {{"resource", "memory"}}), std::nullopt);
}

TEST(LoadavgProbeTest, ItsSettingTurnsPressureOff) {
  Fixture f;
  const ProbeOutcome outcome = f.Scheduled(ConfigFrom("[probes.loadavg]\npressure = false\n"));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_pressure_some_ratio", {{"resource", "cpu"}}), std::nullopt);
  EXPECT_EQ(outcome.result["pressure"], json::object());
}

TEST(LoadavgProbeTest, TheFullFaceReportsJsonAndLeavesTheGaugesAlone) {
  Fixture f;
  std::vector<json> reports;
  const ProbeOutcome outcome = f.Full(&reports);
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["load1"], 6.0);
  EXPECT_EQ(outcome.result["cpus"], 4);
  EXPECT_EQ(outcome.result["pressure"]["cpu"], 0.125);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0]["kind"], "loadavg");
  EXPECT_EQ(reports[0]["tasks"], 412);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_load", {{"window", "1m"}}), std::nullopt);
  EXPECT_EQ(Value(f.registry, "hostperf_loadavg_load_per_cpu"), 0.0);
}

TEST(LoadavgProbeTest, AFailedRunCarriesItsReason) {
  Fixture f;
  f.proc.Remove("loadavg");
  const ProbeOutcome scheduled = f.Scheduled();
  EXPECT_EQ(scheduled.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(scheduled.reason, "proc_unreadable");
  EXPECT_EQ(f.Full().reason, "proc_unreadable");
}

TEST(LoadavgModuleTest, FiguresJudgeTheLoadPerCpu) {
  const auto verdict = [](double per_cpu) {
    const auto figures = LoadavgFigures({{"load1_per_cpu", per_cpu}});
    return figures.size() == 1 ? figures[0].verdict : Verdict::kInfo;
  };
  EXPECT_EQ(verdict(0.5), Verdict::kPass);
  EXPECT_EQ(verdict(1.5), Verdict::kWarn);
  EXPECT_EQ(verdict(2.5), Verdict::kFail);
  EXPECT_TRUE(LoadavgFigures({{"load1_per_cpu", "high"}}).empty());
  EXPECT_TRUE(HeadlineFigures("loadavg", json::array()).empty());
}

TEST(LoadavgModuleTest, ItsSectionHasItsDefaultsAndOneCheckedSetting) {
  const config::Config defaults = DefaultConfig();
  EXPECT_TRUE(defaults.Section("loadavg").schedule.enabled);
  EXPECT_EQ(defaults.Section("loadavg").schedule.interval, std::chrono::minutes(1));
  EXPECT_TRUE(defaults.Settings<LoadavgConfig>().pressure);
  EXPECT_FALSE(ConfigFrom("[probes.loadavg]\npressure = false\n").Settings<LoadavgConfig>().pressure);
  const auto wrong = LoadConfigString("[probes.loadavg]\npressure = 3\n", "bad.toml");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("bad.toml:2:"), std::string::npos) << wrong.error();
  EXPECT_FALSE(LoadConfigString("[probes.loadavg]\npresure = true\n", "bad.toml"));
}

TEST(LoadavgModuleTest, IsRegisteredWithItsCommandAndReasons) {
  const ProbeModule* module = FindProbe("loadavg");
  ASSERT_EQ(module, &kModule);
  EXPECT_EQ(module->command.name, "loadavg");
  EXPECT_EQ(module->parse_options, nullptr);
  EXPECT_EQ(module->failure_reasons, std::vector<std::string_view>{"proc_unreadable"});
}

TEST(LoadavgModuleTest, ItsCommandHasHelpAndOneLineUsageErrors) {
  const config::Config config = DefaultConfig();
  std::string usage_error;
  bool ran = false;
  CommandContext context{config,
                         [&](std::shared_ptr<const ProbeOptions>, std::function<void(const json&)>) {
                           ran = true;
                           return ProbeOutcome::Success({{"load1_per_cpu", 0.5}});
                         },
                         [&](const std::string& message) {
                           usage_error = message;
                           return 2;
                         }};
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(kModule.command.run({"--help"}, context), 0);
  EXPECT_EQ(::testing::internal::GetCapturedStdout().rfind("usage: hostperf loadavg [--json]\n", 0), 0u);
  EXPECT_EQ(kModule.command.run({"--bogus"}, context), 2);
  EXPECT_EQ(usage_error, "unknown option \"--bogus\"");
  EXPECT_EQ(kModule.command.run({"now"}, context), 2);
  EXPECT_EQ(usage_error, "unexpected argument \"now\"");
  EXPECT_FALSE(ran);
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(kModule.command.run({"--json"}, context), 0);
  EXPECT_EQ(json::parse(::testing::internal::GetCapturedStdout())["load1_per_cpu"], 0.5);
  EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace hostperf::probes::loadavg
