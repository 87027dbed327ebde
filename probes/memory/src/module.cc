#include "hostperf/probes/memory/module.h"

#include <cstdio>

#include "hostperf/probes/memory/memory_probe.h"

namespace hostperf::probes::memory {
namespace {

using namespace std::chrono_literals;

void DeclareKeys(config::Schema& schema, MemoryProbeConfig& memory) {
  schema.Size("memory_budget", &memory.memory_budget);
}

config::SectionSchema Section() {
  return config::DescribeSection<MemoryProbeConfig>("memory", {true, 15min, 1min}, DeclareKeys);
}

// STREAM's report (or the JSON result); non-zero exit with the reason when
// the run failed, e.g. validation_failed.
int Command(const std::vector<std::string>& args, const CommandContext& context) {
  auto parsed = ParseMemoryCommand(args);
  if (!parsed) return context.usage_error(parsed.error());
  if (parsed->help) {
    std::fputs(kMemoryUsage, stdout);
    return 0;
  }
  const auto outcome = context.run_full(std::make_shared<MemoryOptions>(parsed->options), {});
  if (parsed->json) {
    PrintJsonResult(outcome);
  } else if (!outcome.result.empty()) {
    std::fputs(FormatStreamReport(outcome.result).c_str(), stdout);
  }
  return CommandExitCode("memory", outcome);
}

}  // namespace

std::vector<Figure> MemoryFigures(const nlohmann::json& result) {
  std::vector<Figure> out;
  for (const nlohmann::json& kernel : ArrayField(result, "kernels")) {
    if (TextField(kernel, "kernel") != "triad") continue;
    if (const auto rate = NumberField(kernel, "best_bytes_per_second")) {
      out.push_back({"triad_bytes_per_second", "", "STREAM triad", *rate,
                     FormatNumber("%.0f MB/s", *rate / kReferenceMB), "no documented threshold", Verdict::kInfo});
    }
  }
  return out;
}

const ProbeModule kModule = {
    .name = "memory",
    .create = &CreateMemoryProbe,
    .config_section = &Section,
    .parse_options = &ParseMemoryModuleOptions,
    .figures = &MemoryFigures,
    .command = {"memory",
                "  memory [-s N] [-n N] [-t N] [--json]\n"
                "                      STREAM: copy, scale, add and triad bandwidth, one thread\n"
                "                      per physical core (hostperf memory --help)\n",
                &Command,
                /*reference_tool=*/""},  // STREAM's "stream" is too common a name to take
    .failure_reasons = {"validation_failed", "out_of_memory", "thread_start_failed", "invalid_options"},
};

}  // namespace hostperf::probes::memory
