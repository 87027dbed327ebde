#include "hostperf/probes/net/remote.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>

#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/responder.h"
#include "remote_process.h"

namespace hostperf::probes::net {

namespace {

using remote::Child;
using remote::Clock;
using remote::LastLine;
using remote::Outcome;
using remote::Quote;
using remote::ReadLogTail;
using remote::RunAll;
using remote::Why;

// How much of a peer's log says why it did not start.
constexpr std::size_t kLogTailBytes = 65536;

// The host part of [user@]host, for the tests' host:port.
std::string HostOf(const std::string& destination) {
  const auto at = destination.rfind('@');
  return at == std::string::npos ? destination : destination.substr(at + 1);
}

class RemotePeersImpl final : public RemotePeers {
 public:
  RemotePeersImpl(RemoteOptions options, std::function<void(const std::string&)> progress)
      : options_(std::move(options)), progress_(std::move(progress)) {}
  ~RemotePeersImpl() override { Stop(); }

  const std::vector<RemoteHost>& hosts() const override { return hosts_; }

  std::vector<std::string> Ssh(const std::string& destination, const std::string& remote_command) const {
    return OpenSsh(options_.ssh, options_.ssh_options, {"-T"}, {destination, remote_command});
  }
  std::vector<std::string> Scp(const std::string& from, const std::string& to) const {
    return OpenSsh(options_.scp, options_.scp_options, {"-q"}, {from, to});
  }

  void Start(const std::vector<std::string>& destinations, const std::vector<std::string>& peer_inputs,
             const std::function<bool()>& cancelled) {
    for (const std::string& destination : destinations) hosts_.push_back({destination, "", "", "", ""});
    const auto step = std::chrono::duration_cast<Clock::duration>(options_.step_timeout);
    if (!options_.installed) {
      MakeDirectories(step, cancelled);
      CopyPeerProgram(step, cancelled);
      if (!options_.extra_files.empty()) CopyExtraFiles(step, cancelled);
    }
    Say("starting hostperf-peer on " + std::to_string(Ready()) + " hosts");
    SpawnPeers(peer_inputs);
    AwaitReady(step, cancelled);
  }

  RemoteCommandResult RunOnHost(std::size_t index, const std::string& command, const std::string& input,
                                std::chrono::nanoseconds timeout, const std::function<bool()>& cancelled,
                                std::size_t max_output) const override {
    RemoteCommandResult result;
    const RemoteHost& host = hosts_.at(index);
    if (!host.error.empty()) {
      result.error = host.error;
      return result;
    }
    const std::string in_directory = host.directory.empty() ? "" : "cd " + Quote(host.directory) + " && ";
    Child child;
    child.SetOutputLimit(max_output);
    if (!child.Spawn(Ssh(host.destination, in_directory + command))) {
      result.error = "ssh: " + child.error();
      return result;
    }
    if (!input.empty() && !child.Write(input)) result.error = "ssh: could not write the command's input";
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
    while (result.error.empty() && !child.Poll()) {
      if (cancelled()) {
        result.error = "cancelled";
      } else if (Clock::now() >= deadline) {
        result.error = "did not end within " +
                       std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s";
      } else {
        child.WaitReadable(std::chrono::milliseconds(200));
        child.Drain();
      }
    }
    if (!result.error.empty()) {
      // Closing the session's input and then the session ends the command.
      child.CloseInput();
      child.Kill();
      child.Reap(std::chrono::seconds(5));
    }
    child.Drain();
    result.status = child.Poll();
    result.out = child.out();
    result.err = child.err();
    return result;
  }

  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    // Closing standard input ends each peer (which removes its copy).
    for (auto& peer : peers_) {
      if (peer) peer->CloseInput();
    }
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (auto& peer : peers_) {
      if (peer) peer->Reap(std::max<Clock::duration>(Clock::duration::zero(), deadline - Clock::now()));
    }
    peers_.clear();  // kills what did not end
    // What was copied goes whatever the peer managed: the directory holds
    // only what this run put there.
    std::vector<std::vector<std::string>> commands;
    std::size_t copies = 0;
    for (const RemoteHost& host : hosts_) {
      commands.push_back(host.directory.empty() ? std::vector<std::string>{}
                                                : Ssh(host.destination, "rm -rf " + Quote(host.directory)));
      copies += host.directory.empty() ? 0 : 1;
    }
    if (copies > 0) {
      Say("removing hostperf-peer from " + std::to_string(copies) + " hosts");
      const auto removed =
          RunStep("removing", commands, std::chrono::duration_cast<Clock::duration>(options_.step_timeout),
                  [] { return false; });
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        if (!hosts_[i].directory.empty() && removed[i].status != 0) {
          Say("could not remove " + hosts_[i].directory + " on " + hosts_[i].destination + ": " +
              Why(removed[i], "ssh rm"));
        }
      }
    }
    // A private log has no name: closing it is all its clean-up.
    logs_.clear();
    for (RemoteHost& host : hosts_) {
      if (!host.log_file.empty()) Say("log of " + host.destination + ": " + host.log_file);
    }
  }

 private:
  std::size_t Ready() const {
    return static_cast<std::size_t>(
        std::count_if(hosts_.begin(), hosts_.end(), [](const RemoteHost& h) { return h.error.empty(); }));
  }
  // An OpenSSH client's command line: the user's options first (the first
  // value of an option wins), then ours, then the operands.
  std::vector<std::string> OpenSsh(const std::string& program, const std::vector<std::string>& user,
                                   std::initializer_list<std::string> ours,
                                   std::initializer_list<std::string> operands) const {
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), user.begin(), user.end());
    argv.insert(argv.end(), ours);
    // Never a password prompt: a key or an agent, or the host fails.
    argv.insert(argv.end(), {"-o", "BatchMode=yes"});
    if (!options_.identity_file.empty()) argv.insert(argv.end(), {"-i", options_.identity_file});
    argv.push_back("--");
    argv.insert(argv.end(), operands);
    return argv;
  }
  void Say(const std::string& line) {
    if (progress_) progress_(line);
  }
  // One step on every host (RunAll, at most options_.parallel at once): a
  // host whose step fails is named as it fails, and a long step says how
  // far it got every few seconds.
  std::vector<Outcome> RunStep(const std::string& what, const std::vector<std::vector<std::string>>& commands,
                               Clock::duration step, const std::function<bool()>& cancelled) {
    const auto total = static_cast<std::size_t>(
        std::count_if(commands.begin(), commands.end(), [](const auto& command) { return !command.empty(); }));
    std::size_t done = 0;
    auto said = Clock::now();
    return RunAll(commands, step, cancelled, options_.parallel, [&](std::size_t i, const Outcome& outcome) {
      if (commands[i].empty()) return;
      ++done;
      if (outcome.status != 0) Say(hosts_[i].destination + ": " + Why(outcome, what));
      if (done < total && Clock::now() - said >= std::chrono::seconds(5)) {
        Say(what + ": " + std::to_string(done) + "/" + std::to_string(total) + " hosts done");
        said = Clock::now();
      }
    });
  }

  // A fresh directory under tmp_dir on each host, for the copied program.
  void MakeDirectories(Clock::duration step, const std::function<bool()>& cancelled) {
    Say("creating a directory under " + options_.tmp_dir + " on " + std::to_string(hosts_.size()) + " hosts");
    std::vector<std::vector<std::string>> commands;
    for (const RemoteHost& host : hosts_) {
      commands.push_back(Ssh(host.destination, "mktemp -d " + Quote(options_.tmp_dir + "/hostperf.XXXXXX")));
    }
    const auto made = RunStep("mktemp", commands, step, cancelled);
    static const std::regex kDirectory("^/[A-Za-z0-9._/+-]*/hostperf\\.[A-Za-z0-9]+$");
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      const std::string dir = LastLine(made[i].out);
      if (made[i].status == 0 && std::regex_match(dir, kDirectory)) {
        hosts_[i].directory = dir;
      } else {
        hosts_[i].error = made[i].status == 0 ? "mktemp printed an unexpected directory \"" + dir + "\""
                                              : Why(made[i], "ssh (mktemp -d in " + options_.tmp_dir + ")");
      }
    }
  }
  void CopyPeerProgram(Clock::duration step, const std::function<bool()>& cancelled) {
    Say("copying hostperf-peer to " + std::to_string(Ready()) + " hosts");
    std::vector<std::vector<std::string>> commands;
    for (const RemoteHost& host : hosts_) {
      commands.push_back(host.error.empty()
                             ? Scp(options_.peer_program, host.destination + ":" + host.directory + "/hostperf-peer")
                             : std::vector<std::string>{});
    }
    const auto copied = RunStep("scp", commands, step, cancelled);
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      if (hosts_[i].error.empty() && copied[i].status != 0) hosts_[i].error = Why(copied[i], "scp");
    }
  }
  // The extra files, in one scp per host, into the copy's directory.
  void CopyExtraFiles(Clock::duration step, const std::function<bool()>& cancelled) {
    Say("copying " + std::to_string(options_.extra_files.size()) + " more files to " + std::to_string(Ready()) +
        " hosts");
    std::vector<std::vector<std::string>> commands;
    for (const RemoteHost& host : hosts_) {
      if (!host.error.empty()) {
        commands.emplace_back();
        continue;
      }
      std::vector<std::string> files = options_.extra_files;
      files.push_back(host.destination + ":" + host.directory + "/");
      std::vector<std::string> argv = Scp(files.front(), files.back());
      // scp's operands: every source, then the directory.
      argv.pop_back();
      argv.pop_back();
      argv.insert(argv.end(), files.begin(), files.end());
      commands.push_back(std::move(argv));
    }
    const auto copied = RunStep("scp", commands, step, cancelled);
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      if (hosts_[i].error.empty() && copied[i].status != 0) hosts_[i].error = Why(copied[i], "scp");
    }
  }
  // One ssh session running hostperf-peer per host still without an error.
  void SpawnPeers(const std::vector<std::string>& peer_inputs) {
    peers_.resize(hosts_.size());
    logs_.resize(hosts_.size());
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      RemoteHost& host = hosts_[i];
      if (!host.error.empty()) continue;
      const std::string program = options_.installed ? options_.installed_program : host.directory + "/hostperf-peer";
      // Sized for the cluster (a full fan-out of plan sessions and the last
      // round's still closing: plan.cc; this CLI's control and test
      // connections, and room to spare) and for the
      // connections test's target, so that its own cap hides no host limit.
      const std::size_t connections = std::max<std::size_t>(
          {2 * kDefaultPlanMaxSessions + 1, hosts_.size() + 16, std::size_t{options_.connections} + 1});
      std::string ports;
      for (const std::uint16_t port : options_.ports) ports += (ports.empty() ? "" : ",") + std::to_string(port);
      std::string command = "exec " + Quote(program) + " --ports " + ports + " --max-connections " +
                            std::to_string(std::min<std::size_t>(connections, 65535));
      if (!host.directory.empty()) command += " --remove-dir " + Quote(host.directory);
      auto log = OpenLog(host);
      if (!log) {
        host.error = "ssh: " + log.error();
        continue;
      }
      logs_[i] = std::move(log).value();
      peers_[i] = std::make_unique<Child>();
      if (!peers_[i]->Spawn(Ssh(host.destination, command), logs_[i].get())) {
        host.error = "ssh: " + peers_[i]->error();
        continue;
      }
      // The secret and the key travel on the encrypted session's standard input only.
      peers_[i]->Write(peer_inputs[i]);
    }
  }
  // Waits up to `step` for each spawned peer's ready line; a host without
  // one gets an error.
  void AwaitReady(Clock::duration step, const std::function<bool()>& cancelled) {
    const auto deadline = Clock::now() + step;
    while (Clock::now() < deadline && !cancelled()) {
      bool waiting = false;
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        RemoteHost& host = hosts_[i];
        if (!host.error.empty() || !host.target.empty()) continue;
        peers_[i]->Drain();
        const std::string& out = peers_[i]->out();
        if (out.find("hostperf-peer ready") != std::string::npos && out.find('\n') != std::string::npos) {
          host.target = HostOf(host.destination) + ":" + std::to_string(options_.ports.front());
        } else if (peers_[i]->Poll()) {
          host.error = "hostperf-peer did not start: " + LastLine(ReadLogTail(logs_[i].get(), kLogTailBytes));
        } else {
          waiting = true;
        }
      }
      if (!waiting) break;
      ::usleep(20000);
    }
    for (RemoteHost& host : hosts_) {
      if (host.error.empty() && host.target.empty()) {
        host.error = cancelled() ? "cancelled" : "hostperf-peer did not report ready in time";
      }
    }
  }
  // With collect_logs, log_dir/hostperf-peer.<host>.log (named in
  // `host.log_file`); otherwise a private file without a name, so that
  // nothing is left behind whatever ends the run (kill -9 included).
  Result<Fd> OpenLog(RemoteHost& host) {
    if (!options_.collect_logs) return remote::OpenAnonymousLog(std::filesystem::temp_directory_path().string());
    std::string name = host.destination;
    std::replace_if(
        name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '.' && c != '-'; }, '_');
    const std::string path = (std::filesystem::path(options_.log_dir) / ("hostperf-peer." + name + ".log")).string();
    auto log = remote::OpenNamedLog(path);
    if (log) host.log_file = path;
    return log;
  }

  RemoteOptions options_;
  std::function<void(const std::string&)> progress_;
  std::vector<RemoteHost> hosts_;
  std::vector<std::unique_ptr<Child>> peers_;  // the running ssh sessions, by host
  std::vector<Fd> logs_;                       // their standard error, by host
  bool stopped_ = false;
};

}  // namespace

namespace {

// A one-time secret: 32 random bytes as 64 hex digits (one line of a peer's input).
Secret OneTimeSecret() {
  const std::string text = HexDigits(RandomSecret());
  return Secret(text.begin(), text.end());
}

}  // namespace

Result<RunCredentials> MakeRunCredentials(std::size_t hosts) {
  auto key = OrchestrationKey::Generate();
  if (!key) return key.failure();
  RunCredentials credentials;
  for (std::size_t i = 0; i < hosts; ++i) credentials.host_secrets.push_back(OneTimeSecret());
  credentials.plan_secret = OneTimeSecret();
  credentials.orchestration_key = std::make_shared<const OrchestrationKey>(std::move(key).value());
  return credentials;
}

std::string PeerInput(const RunCredentials& credentials, std::size_t host) {
  const Secret& own = credentials.host_secrets.at(host);
  return std::string(own.begin(), own.end()) + "\n" + HexDigits(credentials.orchestration_key->public_key()) + "\n" +
         std::string(credentials.plan_secret.begin(), credentials.plan_secret.end()) + "\n";
}

std::unique_ptr<RemotePeers> StartRemotePeers(const std::vector<std::string>& destinations, RemoteOptions options,
                                              const std::vector<std::string>& peer_inputs,
                                              const std::function<bool()>& cancelled,
                                              const std::function<void(const std::string&)>& progress) {
  auto peers = std::make_unique<RemotePeersImpl>(std::move(options), progress);
  peers->Start(destinations, peer_inputs, cancelled);
  return peers;
}

Result<std::string> FindPeerProgram() {
  namespace fs = std::filesystem;
  if (const char* given = std::getenv("HOSTPERF_PEER"); given != nullptr && *given != '\0') {
    if (::access(given, X_OK) == 0) return std::string(given);
    return Failure{"no_peer_program", std::string("HOSTPERF_PEER=") + given + " is not an executable file"};
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Failure{"no_peer_program", "cannot find this program's directory: " + ec.message()};
  for (const fs::path& candidate :
       {self.parent_path() / "hostperf-peer", self.parent_path().parent_path() / "libexec/hostperf/hostperf-peer"}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return Failure{"no_peer_program", "hostperf-peer not found beside " + self.string() +
                                        " nor in ../libexec/hostperf/ (set HOSTPERF_PEER to its path)"};
}

std::string ShellQuote(const std::string& word) { return Quote(word); }

std::string LastLineOf(const std::string& text) { return LastLine(text); }

Result<std::vector<std::string>> SplitOptions(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (const char c : text) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word.push_back(c);
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (quote != 0) return Failure{"bad_option", "unbalanced quote in \"" + text + "\""};
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace hostperf::probes::net
