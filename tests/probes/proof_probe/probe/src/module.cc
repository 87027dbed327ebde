#include "hostperf/probes/loadavg/module.h"

#include <cstdio>
#include <string>
#include <vector>

#include "hostperf/base/flags.h"

namespace hostperf::probes::loadavg {
namespace {

using namespace std::chrono_literals;

void DeclareKeys(config::Schema& schema, LoadavgConfig& loadavg) { schema.Bool("pressure", &loadavg.pressure); }

config::SectionSchema Section() {
  return config::DescribeSection<LoadavgConfig>("loadavg", {true, 1min, 10s}, DeclareKeys);
}

constexpr const char* kUsage =
    "usage: hostperf loadavg [--json]\n"
    "\n"
    "The kernel's load average (/proc/loadavg) per online CPU, judged against\n"
    "1 (pass) and 2 (warn), and the pressure stall information of CPU, I/O and\n"
    "memory (/proc/pressure) where the kernel has it.\n"
    "\n"
    "  --json      print the result as JSON (the run API's \"results\" entry)\n"
    "  -h, --help  this help\n";

constexpr FlagSpec kFlags[] = {Switch("help", "h").Stopping(), Switch("json")};

// "load average: 0.52 0.41 0.30 (1 of 312 tasks runnable), 4 CPUs: 0.13
// per CPU, pass", then one line per PSI resource.
std::string FormatReport(const nlohmann::json& result) {
  std::string out = FormatNumber("load average: %.2f", NumberField(result, "load1").value_or(0)) +
                    FormatNumber(" %.2f", NumberField(result, "load5").value_or(0)) +
                    FormatNumber(" %.2f", NumberField(result, "load15").value_or(0)) +
                    FormatNumber(" (%.0f of", NumberField(result, "runnable").value_or(0)) +
                    FormatNumber(" %.0f tasks runnable)", NumberField(result, "tasks").value_or(0)) +
                    FormatNumber(", %.0f CPUs", NumberField(result, "cpus").value_or(0));
  for (const Figure& figure : LoadavgFigures(result)) {
    out += ": " + figure.shown + ", " + std::string(ToString(figure.verdict)) + " (" + figure.threshold + ")";
  }
  out += "\n";
  const auto pressure = result.find("pressure");
  if (pressure != result.end() && pressure->is_object()) {
    for (const auto& [resource, ratio] : pressure->items()) {
      if (!ratio.is_number()) continue;
      char line[96];
      std::snprintf(line, sizeof line, "pressure %-6s some avg10 %.2f %%\n", resource.c_str(),
                    ratio.get<double>() * 100);
      out += line;
    }
  }
  return out;
}

int Command(const std::vector<std::string>& args, const CommandContext& context) {
  const auto parsed = ParseFlags(args, {kFlags});
  if (!parsed) return context.usage_error(parsed.error());
  if (parsed->Has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!parsed->positional.empty()) return context.usage_error("unexpected argument \"" + parsed->positional[0] + "\"");
  const ProbeOutcome outcome = context.run_full(nullptr, {});
  if (parsed->Has("json")) {
    PrintJsonResult(outcome);
  } else if (!outcome.result.empty()) {
    std::fputs(FormatReport(outcome.result).c_str(), stdout);
  }
  return CommandExitCode("loadavg", outcome);
}

}  // namespace

std::vector<Figure> LoadavgFigures(const nlohmann::json& result) {
  const auto per_cpu = NumberField(result, "load1_per_cpu");
  if (!per_cpu) return {};
  return {{"load1_per_cpu", "", "1-minute load per CPU", *per_cpu, FormatNumber("%.2f per CPU", *per_cpu),
           "pass ≤ 1, warn ≤ 2", AtMost(*per_cpu, 1.0, 2.0)}};
}

const ProbeModule kModule = {
    .name = "loadavg",
    .create = &CreateLoadavgProbe,
    .config_section = &Section,
    .parse_options = nullptr,
    .figures = &LoadavgFigures,
    .command = {"loadavg",
                "  loadavg [--json]    load average per CPU and pressure stall information\n"
                "                      (hostperf loadavg --help)\n",
                &Command, /*reference_tool=*/""},
    .failure_reasons = {"proc_unreadable"},
};

}  // namespace hostperf::probes::loadavg
