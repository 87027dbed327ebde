// A trivial probe that exists only in the test tree. It shows what adding a
// probe takes: this one folder and the one registration line at the bottom.
// Nothing central names it, yet the daemon schedules it and serves its
// metrics, its [probes.example] section is read with the same errors as any
// other, the landing page shows its figure and `hostperf example` runs it.
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::example {
namespace {

using namespace std::chrono_literals;
using probes::ProbeOutcome;

// [probes.example]
struct ExampleConfig : config::ProbeSection {
  static constexpr std::string_view kName = "example";
  std::string greeting = "hello";
  std::uint32_t repeat = 1;
};

void DeclareKeys(config::Schema& schema, ExampleConfig& example) {
  schema.String("greeting", &example.greeting);
  schema.Uint("repeat", &example.repeat, 1, 10);
}

config::SectionSchema Section() {
  return config::DescribeSection<ExampleConfig>("example", {true, 1h, 10s}, DeclareKeys);
}

// "Measures" the configured greeting: its length times `repeat`.
class ExampleProbe final : public probes::Probe {
 public:
  explicit ExampleProbe(const probes::ProbeDeps& deps)
      : registry_(probes::RegistryFor(deps)),
        length_(prometheus::BuildGauge()
                    .Name("hostperf_example_greeting_length")
                    .Help("Characters in the configured greeting times repeat (test-only probe).")
                    .Register(*registry_)
                    .Add({})) {}

  std::string_view Name() const override { return "example"; }

 private:
  ProbeOutcome MeasureScheduled(const probes::ScheduledContext& context) override { return Greet(context); }
  ProbeOutcome MeasureFull(const probes::FullRunContext& context) override { return Greet(context); }

  // Both faces measure the same thing.
  ProbeOutcome Greet(const probes::RunContext& context) {
    const auto& example = context.Settings<ExampleConfig>();
    const double length = static_cast<double>(example.greeting.size() * example.repeat);
    length_.Set(length);
    return ProbeOutcome::Success({{"greeting", example.greeting}, {"length", length}});
  }

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge& length_;
};

std::unique_ptr<probes::Probe> Create(const probes::ProbeDeps& deps) { return std::make_unique<ExampleProbe>(deps); }

std::vector<probes::Figure> Figures(const nlohmann::json& result) {
  const auto length = probes::NumberField(result, "length");
  if (!length) return {};
  return {{"greeting_length", "", "greeting length", *length, probes::FormatNumber("%.0f characters", *length),
           "no threshold (test-only probe)", probes::Verdict::kInfo}};
}

int Command(const std::vector<std::string>& args, const probes::CommandContext& context) {
  for (const auto& arg : args) {
    if (arg == "-h" || arg == "--help") {
      std::fputs("usage: hostperf example\n  prints the configured greeting's length (test-only probe)\n", stdout);
      return 0;
    }
    return context.usage_error("unknown option \"" + arg + "\"");
  }
  const ProbeOutcome outcome = context.run_full(nullptr, {});
  std::printf("%s\n", outcome.result.dump().c_str());
  return outcome.status == ProbeOutcome::Status::kSuccess ? 0 : 1;
}

const probes::ProbeModule kModule = {
    .name = "example",
    .create = &Create,
    .config_section = &Section,
    .parse_options = nullptr,
    .figures = &Figures,
    .command = {"example", "  example             test-only probe: the configured greeting's length\n", &Command,
                /*reference_tool=*/""},
};

}  // namespace
}  // namespace hostperf::example

HOSTPERF_REGISTER_PROBE(hostperf::example::kModule);
