#include "hostperf/probes/memory/memory_probe.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "hostperf/config/config.h"
#include "hostperf/probes/memory/module.h"
#include "probe_test_util.h"

namespace hostperf::probes::memory {
namespace {

using nlohmann::json;

const std::filesystem::path kFixtures = HOSTPERF_FIXTURES_DIR;

// The value of the sample of `family` whose labels include all of `labels`.
std::optional<double> Gauge(prometheus::Registry& registry, const std::string& family,
                            const std::map<std::string, std::string>& labels) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const auto& metric : f.metric) {
      std::size_t matched = 0;
      for (const auto& label : metric.label) {
        const auto it = labels.find(label.name);
        if (it != labels.end() && it->second == label.value) ++matched;
      }
      if (matched == labels.size())
        return f.type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value;
    }
  }
  return std::nullopt;
}

struct Fixture {
  explicit Fixture(const char* sys = "sysfs-2socket-ht", const char* proc = "proc-2socket-ht",
                   MemoryProbeSeams seams = {}) {
    ProbeDeps deps;
    deps.registry = &registry;
    deps.roots = SystemRoots{kFixtures / proc, kFixtures / sys};
    probe = CreateMemoryProbe(deps, std::move(seams));
    auto c = DefaultConfig();
    c.EditSettings<MemoryProbeConfig>().memory_budget = 3 * 8 * 50'000;  // keeps the test short
    config = std::make_shared<const config::Config>(c);
  }
  ProbeOutcome RunScheduled() { return probe->RunScheduled(MakeScheduledContext(*config, "memory")); }
  ProbeOutcome RunFull(json options = nullptr) {
    return test_support::RunParsed(*probe, MakeFullRunContext(*config, "memory"), options);
  }
  prometheus::Registry registry;
  std::unique_ptr<Probe> probe;
  std::shared_ptr<const config::Config> config;
};

TEST(MemoryProbeTest, NameAndSchedule) {
  Fixture f;
  EXPECT_EQ(f.probe->Name(), "memory");
  EXPECT_EQ(MakeScheduledContext(*f.config, "memory").schedule.interval, std::chrono::minutes(15));
}

TEST(MemoryProbeTest, ScheduledRunIsOneThreadWithinTheBudgetAndFlagsCacheResidency) {
  Fixture f;
  const ProbeOutcome outcome = f.RunScheduled();
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  const json& r = outcome.result;
  EXPECT_EQ(r["mode"], "scheduled");
  EXPECT_EQ(r["threads"], 1);
  EXPECT_EQ(r["iterations"], kScheduledIterations);
  EXPECT_EQ(r["array_elements"], 50'000);
  EXPECT_LE(r["total_bytes"].get<std::uint64_t>(), f.config->Settings<MemoryProbeConfig>().memory_budget);
  // Fixture LLC: 30 MiB on each of two packages; 1.2 MB of arrays are cache-resident.
  EXPECT_EQ(r["llc_total_bytes"], 2 * 30720 * 1024);
  EXPECT_EQ(r["cache_resident"], true);
  EXPECT_TRUE(r["validation"]["ok"].get<bool>());
  ASSERT_EQ(r["kernels"].size(), 4u);
  EXPECT_EQ(r["kernels"][0]["kernel"], "copy");
  EXPECT_EQ(r["kernels"][0]["bytes_per_iteration"], 2 * 8 * 50'000);
  EXPECT_EQ(r["kernels"][3]["kernel"], "triad");
  EXPECT_EQ(r["kernels"][3]["bytes_per_iteration"], 3 * 8 * 50'000);

  for (const char* kernel : {"copy", "scale", "add", "triad"}) {
    const auto rate =
        Gauge(f.registry, "hostperf_memory_bandwidth_bytes_per_second", {{"kernel", kernel}, {"threads", "1"}});
    ASSERT_TRUE(rate.has_value()) << kernel;
    EXPECT_GT(*rate, 0) << kernel;
  }
  EXPECT_EQ(Gauge(f.registry, "hostperf_memory_cache_resident", {{"threads", "1"}}), 1.0);
  EXPECT_EQ(Gauge(f.registry, "hostperf_memory_array_bytes", {{"threads", "1"}}), 3.0 * 8 * 50'000);
}

TEST(MemoryProbeTest, UnknownLlcIsReportedAndFlagged) {
  Fixture f("sysfs-single", "proc-amd");
  const ProbeOutcome outcome = f.RunScheduled();
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess);
  EXPECT_EQ(outcome.result["llc_bytes"], 0);
  EXPECT_EQ(outcome.result["llc_known"], false);
  EXPECT_EQ(outcome.result["cache_resident"], true);
}

TEST(MemoryProbeTest, FullRunTakesOptionsAndPins) {
  Fixture f("sysfs-single", "proc-amd");  // one core: CPU 0
  const ProbeOutcome outcome = f.RunFull({{"array_elements", 20'000}, {"iterations", 3}});
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["mode"], "full");
  EXPECT_EQ(outcome.result["threads"], 1);
  EXPECT_EQ(outcome.result["pinned_cpus"], json::array({0}));
  EXPECT_EQ(outcome.result["array_elements"], 20'000);
  EXPECT_EQ(outcome.result["iterations"], 3);
}

TEST(MemoryProbeTest, MoreThreadsThanCoresRunUnpinned) {
  Fixture f("sysfs-single", "proc-amd");
  const ProbeOutcome outcome = f.RunFull({{"array_elements", 20'000}, {"iterations", 2}, {"threads", 3}});
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["threads"], 3);
  EXPECT_TRUE(outcome.result["pinned_cpus"].empty());
  EXPECT_TRUE(Gauge(f.registry, "hostperf_memory_bandwidth_bytes_per_second", {{"kernel", "triad"}, {"threads", "3"}})
                  .has_value());
}

TEST(MemoryProbeTest, BadOptionsFail) {
  Fixture f;
  const ProbeOutcome outcome = f.RunFull({{"iterations", 1}});
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "bad_options");  // parsed at the edge: the probe never sees them
  EXPECT_NE(outcome.message.find("iterations"), std::string::npos);
}

TEST(MemoryProbeTest, ValidationFailureIsAFailureAndCounted) {
  MemoryProbeSeams seams;
  seams.before_validation = [](const StreamArrays& arrays) { arrays.a[7] = -1; };
  Fixture f("sysfs-2socket-ht", "proc-2socket-ht", seams);
  const ProbeOutcome outcome = f.RunScheduled();
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "validation_failed");
  EXPECT_NE(outcome.message.find("array a"), std::string::npos) << outcome.message;
  EXPECT_EQ(outcome.result["validation"]["ok"], false);
  EXPECT_EQ(Gauge(f.registry, "hostperf_memory_validation_errors_total", {}), 1.0);
  // Failed runs publish no bandwidth.
  EXPECT_FALSE(Gauge(f.registry, "hostperf_memory_bandwidth_bytes_per_second", {{"kernel", "copy"}}).has_value());
}

TEST(MemoryProbeTest, CancelledRunFails) {
  Fixture f;
  std::atomic<bool> cancel{true};
  ScheduledContext context = MakeScheduledContext(*f.config, "memory");
  context.cancel = &cancel;
  const ProbeOutcome outcome = f.probe->RunScheduled(context);
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "cancelled");
}

TEST(ParseMemoryOptionsTest, ValidAndInvalid) {
  auto parsed = ParseMemoryOptions({{"array_elements", 5000}, {"iterations", 4}, {"threads", 2}});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->array_elements, 5000u);
  EXPECT_EQ(parsed->iterations, 4);
  EXPECT_EQ(parsed->threads, 2);
  EXPECT_EQ(ToJson(*parsed), json({{"array_elements", 5000}, {"iterations", 4}, {"threads", 2}}));
  EXPECT_TRUE(ParseMemoryOptions(nullptr).ok());
  EXPECT_TRUE(ParseMemoryOptions(json::object()).ok());
  for (const json& bad : {json::array(), json("x"), json{{"threads", 0}}, json{{"threads", -1}}, json{{"threads", 2.5}},
                          json{{"threads", "2"}}, json{{"iterations", 1}}, json{{"iterations", 100000}},
                          json{{"array_elements", 10}}, json{{"array_elements", 1ULL << 62}}, json{{"bogus", 1}}}) {
    EXPECT_FALSE(ParseMemoryOptions(bad).ok()) << bad.dump();
  }
}

TEST(ParseMemoryCommandTest, Flags) {
  auto parsed = ParseMemoryCommand({"-s", "20000", "--ntimes", "5", "-t", "2", "--json"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(ToJson(parsed->options), json({{"array_elements", 20000}, {"iterations", 5}, {"threads", 2}}));
  EXPECT_TRUE(parsed->json);
  EXPECT_TRUE(ParseMemoryCommand({"--help"})->help);
  EXPECT_TRUE(ToJson(ParseMemoryCommand({})->options).empty());
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"-s"}, {"-s", "x"}, {"-s", "-5"}, {"-n", "1"}, {"-t", "0"}, {"--bogus"}, {"-s", "12abc"}}) {
    EXPECT_FALSE(ParseMemoryCommand(bad).ok()) << bad[0];
  }
}

TEST(ParseMemoryCommandTest, EqualsValuesAndAttachedShortValues) {
  auto parsed = ParseMemoryCommand({"--array-size=20000", "--ntimes=5", "-t2"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(ToJson(parsed->options), json({{"array_elements", 20000}, {"iterations", 5}, {"threads", 2}}));
  EXPECT_FALSE(ParseMemoryCommand({"--json=yes"}).ok());
  EXPECT_FALSE(ParseMemoryCommand({"extra"}).ok());
}

TEST(FormatStreamReportTest, StreamTable) {
  const json result = {
      {"threads", 2},
      {"pinned_threads", 2},
      {"iterations", 10},
      {"array_elements", 10'000'000},
      {"array_bytes", 80'000'000},
      {"llc_total_bytes", 32 << 20},
      {"llc_known", true},
      {"cache_resident", false},
      {"kernels",
       {{{"kernel", "copy"},
         {"best_bytes_per_second", 12345.6e6},
         {"avg_seconds", 0.0131},
         {"min_seconds", 0.012960},
         {"max_seconds", 0.0142}},
        {{"kernel", "triad"},
         {"best_bytes_per_second", 13000.04e6},
         {"avg_seconds", 0.0190},
         {"min_seconds", 0.018461},
         {"max_seconds", 0.0201}}}},
      {"validation",
       {{"ok", true}, {"message", "Solution Validates: avg error less than 1.000000e-13 on all three arrays"}}},
  };
  const std::string report = FormatStreamReport(result);
  EXPECT_NE(report.find("Array size = 10000000 (elements)"), std::string::npos) << report;
  EXPECT_NE(report.find("Memory per array = 76.3 MiB"), std::string::npos) << report;
  EXPECT_NE(report.find("Each kernel will be executed 10 times."), std::string::npos) << report;
  EXPECT_NE(report.find("Number of Threads counted = 2"), std::string::npos) << report;
  EXPECT_NE(report.find("Function    Best Rate MB/s  Avg time     Min time     Max time\n"), std::string::npos);
  EXPECT_NE(report.find("Copy:           12345.6     0.013100     0.012960     0.014200\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("Triad:          13000.0     0.019000     0.018461     0.020100\n"), std::string::npos)
      << report;
  EXPECT_NE(report.find("arrays exceed 4x the LLC"), std::string::npos) << report;
  EXPECT_NE(report.find("Solution Validates"), std::string::npos);
}

TEST(FormatStreamReportTest, ToleratesEmptyAndUnknownLlc) {
  const std::string report = FormatStreamReport(json::object());
  EXPECT_NE(report.find("Last-level cache size unknown"), std::string::npos);
  EXPECT_NE(report.find("not validated"), std::string::npos);
  EXPECT_NO_THROW(FormatStreamReport(json::array()));
}

}  // namespace
}  // namespace hostperf::probes::memory
