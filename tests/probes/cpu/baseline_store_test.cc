#include "hostperf/probes/cpu/baseline_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "hostperf/base/files.h"
#include "temp_dir.h"

namespace hostperf::probes::cpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::time_t kNow = 1764672000;

CpuProbeConfig Calibrating(std::uint32_t runs) {
  CpuProbeConfig config;
  config.calibration_runs = runs;
  return config;
}

BaselineStore MakeStore(const fs::path& dir) {
  return BaselineStore(dir, [] { return kNow; });
}

json ReadJson(const fs::path& path) { return json::parse(ReadFile(path).value_or("")); }

void WriteText(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

class BaselineStoreTest : public ::testing::Test {
 protected:
  test_support::TempDir temp_;
  fs::path dir_ = temp_.path() / "state";  // created by the store on first save
};

TEST_F(BaselineStoreTest, CalibratesToTheMedianOfTheFirstRuns) {
  BaselineStore store = MakeStore(dir_);
  const auto config = Calibrating(5);
  EXPECT_FALSE(store.Get("fp1", config).seconds.has_value());
  for (const double seconds : {0.050, 0.070, 0.048, 0.052}) {
    const Baseline baseline = store.AddCalibrationSample("fp1", seconds, config);
    EXPECT_FALSE(baseline.seconds.has_value());
  }
  Baseline baseline = store.AddCalibrationSample("fp1", 0.051, config);
  ASSERT_TRUE(baseline.seconds.has_value());
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.051);
  EXPECT_EQ(baseline.samples, 5u);
  EXPECT_EQ(baseline.samples_needed, 5u);
  EXPECT_FALSE(baseline.from_config);

  // Later runs are measured against the baseline, not folded into it.
  baseline = store.AddCalibrationSample("fp1", 0.500, config);
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.051);
  EXPECT_EQ(baseline.samples, 5u);

  const json doc = ReadJson(dir_ / "cpu_baselines.json");
  EXPECT_DOUBLE_EQ(doc["fp1"]["baseline_cpu_seconds"].get<double>(), 0.051);
  EXPECT_EQ(doc["fp1"]["samples"].size(), 5u);
  EXPECT_EQ(doc["fp1"]["calibrated_at"].get<std::int64_t>(), kNow);
  EXPECT_FALSE(fs::exists(dir_ / "cpu_baselines.json.tmp"));
}

TEST_F(BaselineStoreTest, CalibrationSurvivesRestarts) {
  const auto config = Calibrating(3);
  {
    BaselineStore store = MakeStore(dir_);
    store.AddCalibrationSample("fp1", 0.040, config);
    store.AddCalibrationSample("fp1", 0.060, config);
  }
  BaselineStore reloaded = MakeStore(dir_);
  EXPECT_EQ(reloaded.Get("fp1", config).samples, 2u);
  const Baseline baseline = reloaded.AddCalibrationSample("fp1", 0.050, config);
  ASSERT_TRUE(baseline.seconds.has_value());
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.050);

  BaselineStore again = MakeStore(dir_);
  EXPECT_DOUBLE_EQ(*again.Get("fp1", config).seconds, 0.050);
}

TEST_F(BaselineStoreTest, ConfigBaselineOverridesAndStopsCalibration) {
  BaselineStore store = MakeStore(dir_);
  auto config = Calibrating(1);
  store.AddCalibrationSample("fp1", 0.050, config);
  config.baselines["fp1"] = std::chrono::milliseconds(42);
  Baseline baseline = store.Get("fp1", config);
  ASSERT_TRUE(baseline.seconds.has_value());
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.042);
  EXPECT_TRUE(baseline.from_config);

  // Configured from the start: nothing is collected.
  baseline = store.AddCalibrationSample("fp2", 0.050, [&] {
    auto other = Calibrating(1);
    other.baselines["fp2"] = std::chrono::milliseconds(60);
    return other;
  }());
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.060);
  EXPECT_EQ(baseline.samples, 0u);
}

TEST_F(BaselineStoreTest, NewFingerprintStartsItsOwnBaseline) {
  BaselineStore store = MakeStore(dir_);
  const auto config = Calibrating(2);
  store.AddCalibrationSample("old-binary", 0.050, config);
  store.AddCalibrationSample("old-binary", 0.050, config);
  ASSERT_TRUE(store.Get("old-binary", config).seconds.has_value());

  Baseline fresh = store.Get("new-binary", config);
  EXPECT_FALSE(fresh.seconds.has_value());
  EXPECT_EQ(fresh.samples, 0u);
  store.AddCalibrationSample("new-binary", 0.080, config);
  fresh = store.AddCalibrationSample("new-binary", 0.090, config);
  EXPECT_DOUBLE_EQ(*fresh.seconds, 0.085);
  EXPECT_DOUBLE_EQ(*store.Get("old-binary", config).seconds, 0.050);
}

TEST_F(BaselineStoreTest, CorruptFileIsTreatedAsEmpty) {
  fs::create_directories(dir_);
  WriteText(dir_ / "cpu_baselines.json", "{\"fp1\": {\"baseline_cpu_seconds\": 0.05,");
  BaselineStore store = MakeStore(dir_);
  const auto config = Calibrating(1);
  EXPECT_FALSE(store.Get("fp1", config).seconds.has_value());
  EXPECT_TRUE(fs::exists(dir_ / "cpu_baselines.json.corrupt"));

  store.AddCalibrationSample("fp1", 0.030, config);
  EXPECT_DOUBLE_EQ(ReadJson(dir_ / "cpu_baselines.json")["fp1"]["baseline_cpu_seconds"].get<double>(), 0.030);
}

// Nested deeper than kMaxStoredJsonDepth is corrupt, not built.
TEST_F(BaselineStoreTest, DeeplyNestedFileIsTreatedAsCorrupt) {
  fs::create_directories(dir_);
  WriteText(dir_ / "cpu_baselines.json",
            R"({"fp1": {"baseline_cpu_seconds": 0.05, "x": )" + std::string(5000, '[') + std::string(5000, ']') + "}}");
  BaselineStore store = MakeStore(dir_);
  EXPECT_FALSE(store.Get("fp1", Calibrating(1)).seconds.has_value());
  EXPECT_TRUE(fs::exists(dir_ / "cpu_baselines.json.corrupt"));
}

TEST_F(BaselineStoreTest, MalformedEntriesAreDroppedOrCleaned) {
  fs::create_directories(dir_);
  WriteText(dir_ / "cpu_baselines.json", R"({
    "bad": 17,
    "weird": {"baseline_cpu_seconds": "fast", "samples": [0.05, "x", -1, null, 0.07]},
    "good": {"baseline_cpu_seconds": 0.05, "samples": [0.05], "calibrated_at": 1}
  })");
  BaselineStore store = MakeStore(dir_);
  const auto config = Calibrating(3);
  EXPECT_FALSE(store.Get("bad", config).seconds.has_value());
  EXPECT_FALSE(store.Get("weird", config).seconds.has_value());
  EXPECT_EQ(store.Get("weird", config).samples, 2u);
  EXPECT_DOUBLE_EQ(*store.Get("good", config).seconds, 0.05);
}

TEST_F(BaselineStoreTest, UnwritableStateDirectoryKeepsBaselinesInMemory) {
  // A regular file where the directory should be: fails even for root.
  WriteText(temp_.path() / "blocker", "");
  BaselineStore store = MakeStore(temp_.path() / "blocker" / "state");
  const auto config = Calibrating(2);
  store.AddCalibrationSample("fp1", 0.040, config);
  const Baseline baseline = store.AddCalibrationSample("fp1", 0.060, config);
  ASSERT_TRUE(baseline.seconds.has_value());
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.050);
}

TEST_F(BaselineStoreTest, EmptyStateDirectoryMeansMemoryOnly) {
  BaselineStore store = MakeStore(fs::path());
  const Baseline baseline = store.AddCalibrationSample("fp1", 0.040, Calibrating(1));
  EXPECT_DOUBLE_EQ(*baseline.seconds, 0.040);
  EXPECT_FALSE(fs::exists("cpu_baselines.json"));
}

TEST_F(BaselineStoreTest, NonsenseSamplesAreIgnored) {
  BaselineStore store = MakeStore(dir_);
  const auto config = Calibrating(1);
  EXPECT_FALSE(store.AddCalibrationSample("fp1", 0, config).seconds.has_value());
  EXPECT_FALSE(store.AddCalibrationSample("fp1", -1, config).seconds.has_value());
  EXPECT_EQ(store.Get("fp1", config).samples, 0u);
}

}  // namespace
}  // namespace hostperf::probes::cpu
