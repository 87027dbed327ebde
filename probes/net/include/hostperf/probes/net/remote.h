#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/protocol.h"

namespace hostperf::probes::net {

// `hostperf net` on bare hosts (vnetperf's way): hostperf-peer copied over
// SCP and started over SSH on each host, with the system's OpenSSH client.
struct RemoteOptions {
  std::string identity_file;             // ssh -i / scp -i; empty: the client's defaults
  std::vector<std::string> ssh_options;  // before our own, so that they win
  std::vector<std::string> scp_options;
  std::string tmp_dir = "/tmp";  // where each host gets its hostperf.XXXXXX directory
  // Use the hosts' installed hostperf-peer (vnetperf's --vertica-install)
  // instead of copying one.
  bool installed = false;
  std::string installed_program = "/usr/libexec/hostperf/hostperf-peer";
  bool collect_logs = false;  // bring each host's peer log back to log_dir
  std::string log_dir = ".";
  std::string peer_program;  // the local hostperf-peer to copy (FindPeerProgram)
  // More files for each host's copy directory, beside hostperf-peer, by
  // their base names (hostperf check's agent: the CLI and the libraries it
  // loads). Not with `installed`.
  std::vector<std::string> extra_files;
  // The peers listen on all; the tests reach them on the first (and, for
  // throughput, the second and third: vnetperf's three ports).
  std::vector<std::uint16_t> ports{14159, 14160, 14161};
  std::uint32_t connections = 64;  // the connections test's target (--max-connections)
  std::string ssh = "ssh";
  std::string scp = "scp";
  std::chrono::seconds step_timeout{60};  // each of mktemp, scp, start, stop, cleanup, per host
  // The most SSH or SCP sessions a step opens at once (gpssh's bounded
  // fan-out); the peers' own sessions, one per host, stay open for the run.
  std::size_t parallel = 64;
};

struct RemoteHost {
  std::string destination;  // as given: [user@]host
  std::string target;       // host:port for the tests, once the peer is ready
  std::string error;        // why it could not be started
  std::string directory;    // the copy's directory there (empty when installed)
  std::string log_file;     // with collect_logs, where its log went
};

// A command run on one host over SSH (RemotePeers::RunOnHost).
struct RemoteCommandResult {
  std::optional<int> status;  // its exit status (128 + signal); none: it did not end
  std::string out;            // its standard output (up to the limit asked for)
  std::string err;            // the end of its standard error
  std::string error;          // why it did not run to its end (ssh failed, timed out, cancelled)
};

// The peers started for one run. Stop() (also run by the destructor, so on
// every path out) ends each peer by closing its standard input, removes what
// was copied and brings the logs back.
class RemotePeers {
 public:
  virtual ~RemotePeers() = default;
  virtual const std::vector<RemoteHost>& hosts() const = 0;
  // Runs the shell command line `command` on host `index` (one of hosts()
  // without an error) over its own SSH session, in the host's copy
  // directory, with `input` on its standard input. The input stays open
  // while the command runs: its end tells the command that this CLI went
  // away. Ends it (closing the session) at `timeout` or when `cancelled`.
  // Safe to call from several threads at once, once Start has returned.
  virtual RemoteCommandResult RunOnHost(std::size_t index, const std::string& command, const std::string& input,
                                        std::chrono::nanoseconds timeout, const std::function<bool()>& cancelled,
                                        std::size_t max_output) const = 0;
  virtual void Stop() = 0;
};

// The credentials of one run over SSH, made for it and gone with it: a
// secret of each host's own (the CLI's sessions with that host: nobody else
// holds it), a run-wide secret that only opens the sessions of plans between
// the hosts, and the run's orchestration key (only its public half leaves
// the CLI). A bare host that turns hostile can take part in the plans the
// CLI signs, and nothing else.
struct RunCredentials {
  std::vector<Secret> host_secrets;  // by destination; each 64 hex digits
  Secret plan_secret;
  std::shared_ptr<const OrchestrationKey> orchestration_key;
};
Result<RunCredentials> MakeRunCredentials(std::size_t hosts);
// What host `host`'s peer reads on its standard input: its secret, the
// public key, the plan secret, one line each (hostperf-peer --help).
std::string PeerInput(const RunCredentials& credentials, std::size_t host);

// Starts a peer on every host at once; a host where it failed has its error
// set (the others run). `peer_inputs`: what each destination's peer is
// given on its standard input (PeerInput). `progress`: one line per step and host.
std::unique_ptr<RemotePeers> StartRemotePeers(const std::vector<std::string>& destinations, RemoteOptions options,
                                              const std::vector<std::string>& peer_inputs,
                                              const std::function<bool()>& cancelled,
                                              const std::function<void(const std::string&)>& progress);

// The hostperf-peer to copy: $HOSTPERF_PEER, beside this program (the build
// tree) or in ../libexec/hostperf/ from it (an install).
Result<std::string> FindPeerProgram();

// `word` in single quotes for a remote shell (RunOnHost's command lines).
std::string ShellQuote(const std::string& word);
// The last non-empty line of `text` (a remote command's last word on why).
std::string LastLineOf(const std::string& text);

// Splits an option string as a shell would split plain words (quotes
// group; no expansion): "-o Port=2222 -o 'User=a b'".
Result<std::vector<std::string>> SplitOptions(const std::string& text);

}  // namespace hostperf::probes::net
