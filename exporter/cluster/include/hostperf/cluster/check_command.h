#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::cluster {

// `hostperf check`, gpcheckperf's counterpart: the CLI's dispatcher names it
// in `hostperf --help` and runs it, also under the reference tool's name (a
// drop-in link).
inline constexpr std::string_view kCheckCommandName = "check";
inline constexpr std::string_view kCheckReferenceTool = "gpcheckperf";
// Its lines in `hostperf --help`.
std::string_view CheckCommandSummary();

// The terminal's line of what runs now, for as long as the tests run.
class StepLine {
 public:
  virtual ~StepLine() = default;
  virtual void Set(const std::string& step) = 0;
  // Before another line goes to the terminal.
  virtual void Clear() = 0;
};

// What `hostperf check` gets from the CLI binary (probes::CommandContext's
// counterpart for a command that runs several probes on several hosts).
struct CheckCommandContext {
  std::shared_ptr<const config::Config> config;
  // Runs a probe's full mode in this process (the CLI's full-run path, the
  // run API's code path), for the tests of this host.
  std::function<probes::ProbeOutcome(const probes::ProbeModule& module,
                                     std::shared_ptr<const probes::ProbeOptions> options)>
      run_local;
  // A bad option: prints one line, "hostperf check: <message>; see
  // 'hostperf check --help'", and returns the usage exit code (2).
  std::function<int(const std::string& message)> usage_error;
  // Set once the user asked to stop (Ctrl-C, SIGTERM): other hosts' runs are
  // cancelled (this host's stop on their own).
  const std::atomic<bool>* cancel = nullptr;
  // Made when the tests start, dropped when they end; null: no such line.
  std::function<std::unique_ptr<StepLine>()> step_line;
};

// gpcheckperf: parses the arguments (ParseCheckArgs), runs the selected
// tests on every host (this one through `run_local`, others through their
// run API with api.token_file or --token-file) and prints the RESULT block,
// or with --json the figures, on stdout; each error on stderr. Exit code: 0,
// 1 when a test failed or could not run, 2 on a usage error.
int CheckCommand(const std::vector<std::string>& args, const CheckCommandContext& context);

}  // namespace hostperf::cluster
