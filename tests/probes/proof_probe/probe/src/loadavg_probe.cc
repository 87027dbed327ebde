// The load average probe: the kernel's run-queue averages and, where the
// kernel has PSI, how long tasks waited for CPU, I/O and memory. The
// scheduled face publishes them as gauges; the full face returns them as a
// report and leaves the gauges alone.
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdio>
#include <sstream>

#include "hostperf/base/files.h"
#include "hostperf/probes/loadavg/module.h"

namespace hostperf::probes::loadavg {

namespace {

constexpr const char* kPressureResources[] = {"cpu", "io", "memory"};

// "some avg10=1.25 avg60=..." -> 0.0125; nullopt without a "some" line.
std::optional<double> SomeAvg10(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("some ", 0) != 0) continue;
    const auto at = line.find("avg10=");
    if (at == std::string::npos) return std::nullopt;
    double percent = 0;
    if (std::sscanf(line.c_str() + at + 6, "%lf", &percent) != 1) return std::nullopt;
    return percent / 100.0;
  }
  return std::nullopt;
}

class LoadavgProbe final : public Probe {
 public:
  explicit LoadavgProbe(const ProbeDeps& deps)
      : proc_(deps.roots.proc),
        registry_(RegistryFor(deps)),
        load_(prometheus::BuildGauge()
                  .Name("hostperf_loadavg_load")
                  .Help("The kernel's load average over the window (runnable and uninterruptible tasks).")
                  .Register(*registry_)),
        per_cpu_(prometheus::BuildGauge()
                     .Name("hostperf_loadavg_load_per_cpu")
                     .Help("The 1-minute load average divided by the online CPUs.")
                     .Register(*registry_)
                     .Add({})),
        runnable_(prometheus::BuildGauge()
                      .Name("hostperf_loadavg_runnable_tasks")
                      .Help("Tasks runnable at the last scheduled run.")
                      .Register(*registry_)
                      .Add({})),
        pressure_(prometheus::BuildGauge()
                      .Name("hostperf_loadavg_pressure_some_ratio")
                      .Help("PSI 'some avg10': share of the last 10 s some task waited for the resource.")
                      .Register(*registry_)) {}

  std::string_view Name() const override { return "loadavg"; }

 protected:
  ProbeOutcome MeasureScheduled(const ScheduledContext& context) override {
    auto sample = ReadLoadSample(proc_, context.Settings<LoadavgConfig>().pressure);
    if (!sample) return ProbeOutcome::Failure(sample.failure());
    load_.Add({{"window", "1m"}}).Set(sample->load1);
    load_.Add({{"window", "5m"}}).Set(sample->load5);
    load_.Add({{"window", "15m"}}).Set(sample->load15);
    per_cpu_.Set(sample->Load1PerCpu());
    runnable_.Set(sample->runnable);
    for (const auto& [resource, ratio] : sample->pressure) pressure_.Add({{"resource", resource}}).Set(ratio);
    return ProbeOutcome::Success(sample->ToJson());
  }

  // A full run always reads PSI (the report says what it found) and streams
  // the reading as one report row.
  ProbeOutcome MeasureFull(const FullRunContext& context) override {
    auto sample = ReadLoadSample(proc_, /*pressure=*/true);
    if (!sample) return ProbeOutcome::Failure(sample.failure());
    nlohmann::json result = sample->ToJson();
    if (context.on_report) {
      nlohmann::json row = result;
      row["kind"] = "loadavg";
      context.on_report(row);
    }
    return ProbeOutcome::Success(std::move(result));
  }

 private:
  std::filesystem::path proc_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& load_;
  prometheus::Gauge& per_cpu_;
  prometheus::Gauge& runnable_;
  prometheus::Family<prometheus::Gauge>& pressure_;
};

}  // namespace

nlohmann::json LoadSample::ToJson() const {
  nlohmann::json out = {{"load1", load1},
                        {"load5", load5},
                        {"load15", load15},
                        {"runnable", runnable},
                        {"tasks", tasks},
                        {"cpus", cpus},
                        {"load1_per_cpu", Load1PerCpu()}};
  out["pressure"] = nlohmann::json::object();
  for (const auto& [resource, ratio] : pressure) out["pressure"][resource] = ratio;
  return out;
}

Result<LoadSample> ReadLoadSample(const std::filesystem::path& proc, bool pressure) {
  using R = Result<LoadSample>;
  const auto loadavg = ReadFile(proc / "loadavg");
  if (!loadavg) return R::Error("proc_unreadable", "cannot read " + (proc / "loadavg").string());
  LoadSample sample;
  if (std::sscanf(loadavg->c_str(), "%lf %lf %lf %d/%d", &sample.load1, &sample.load5, &sample.load15, &sample.runnable,
                  &sample.tasks) != 5) {
    return R::Error("proc_unreadable", (proc / "loadavg").string() + ": not a load average: \"" + *loadavg + "\"");
  }
  const auto stat = ReadFile(proc / "stat");
  if (!stat) return R::Error("proc_unreadable", "cannot read " + (proc / "stat").string());
  std::istringstream lines(*stat);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.size() > 3 && line.rfind("cpu", 0) == 0 && line[3] >= '0' && line[3] <= '9') ++sample.cpus;
  }
  if (sample.cpus == 0) return R::Error("proc_unreadable", (proc / "stat").string() + ": no cpuN line");
  if (pressure) {
    for (const char* resource : kPressureResources) {
      const auto text = ReadFile(proc / "pressure" / resource);
      if (!text) continue;  // no PSI on this kernel
      if (const auto ratio = SomeAvg10(*text)) sample.pressure[resource] = *ratio;
    }
  }
  return sample;
}

std::unique_ptr<Probe> CreateLoadavgProbe(const ProbeDeps& deps) { return std::make_unique<LoadavgProbe>(deps); }

}  // namespace hostperf::probes::loadavg
