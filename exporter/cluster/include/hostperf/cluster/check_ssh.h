#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/cluster/check.h"
#include "hostperf/cluster/check_command.h"

namespace hostperf::cluster {

// `hostperf check --ssh`: gpcheckperf's tests on hosts with nothing
// installed. Each host gets, over SCP into a fresh directory under
// --tmp-dir, hostperf-peer (static: the network test's responder and
// sender) and this CLI with every shared library it loads, the dynamic
// loader included (the agent bundle), so that the disk and stream tests run
// there whatever the host has installed. The network test's links are
// plans the CLI signs with a key made for the run; every host has a secret
// of its own. When the check ends, on every path out (kill -9 of the CLI
// included: the peer's SSH session ends, and the peer removes the
// directory), nothing is left on any host.

// `hostperf check-agent PROBE`: what the bundle runs on a host. Reads the
// probe's full-run options as one JSON line on standard input, runs the
// probe's full mode (as `hostperf check` runs it locally) and prints its
// outcome as one JSON line: {"status", "reason", "message", "result"}. The
// end of standard input stops the run (the CLI went away).
inline constexpr std::string_view kCheckAgentCommandName = "check-agent";
int CheckAgentCommand(const std::vector<std::string>& args, const CheckCommandContext& context);

// The files that run this program on a host of the same architecture with
// nothing installed: the program itself (/proc/self/exe), every shared
// object it has loaded (by the names the loader found them under, which
// are their sonames) and the loader. `command_prefix(dir)`: the shell words
// that start it from `dir` ("exec DIR/ld.so --library-path DIR DIR/prog").
struct AgentBundle {
  std::vector<std::string> files;
  std::string program;  // base name of the program in `files`
  std::string loader;   // base name of the dynamic loader; empty: a static program
};
Result<AgentBundle> FindAgentBundle();
std::string AgentCommandLine(const AgentBundle& bundle, const std::string& directory, std::string_view probe);

// The hosts of one check over SSH, once started: what RunCheck runs each
// host's tests and each link with. Stopping (the destructor) ends the peers
// and removes every copy.
class SshCheckHosts {
 public:
  virtual ~SshCheckHosts() = default;
  // Hosts where nothing could be started, each with why (one line each).
  virtual const std::vector<std::string>& unusable() const = 0;
  virtual HostRunner host_runner() = 0;
  virtual RoundRunner round_runner() = 0;
};

// Starts the bundle and hostperf-peer on options.hosts (SSH destinations).
// `progress`: one line per step. A failure when nothing can start (no
// hostperf-peer or bundle here, no randomness for the secrets).
Result<std::unique_ptr<SshCheckHosts>> StartSshCheckHosts(const CheckOptions& options,
                                                          const std::function<bool()>& cancelled,
                                                          const std::function<void(const std::string&)>& progress);

}  // namespace hostperf::cluster
