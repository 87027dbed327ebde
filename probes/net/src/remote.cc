#include "hostperf/probes/net/remote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>

#include "hostperf/base/files.h"

namespace hostperf::probes::net {

namespace {

using Clock = std::chrono::steady_clock;

// A child process with pipes on its standard streams. Its own process group
// (a terminal's Ctrl-C reaches hostperf alone, which then stops the peers
// in order) and SIGTERM when hostperf dies (the SSH session closes, and the
// peer at the other end removes its copy). Spawned from the main thread
// only: the death signal follows the spawning thread.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    Kill();
    Reap(std::chrono::seconds(2));
    CloseInput();
    for (int* fd : {&out_, &err_}) {
      if (*fd >= 0) ::close(*fd);
    }
  }

  // `stderr_file`: the child's standard error goes there (empty: a pipe, read into err()).
  bool Spawn(const std::vector<std::string>& argv, const std::string& stderr_file = "") {
    int in[2], out[2], err[2] = {-1, -1};
    if (::pipe2(in, O_CLOEXEC) != 0) return Failed("pipe");
    if (::pipe2(out, O_CLOEXEC) != 0) return Failed("pipe");
    if (stderr_file.empty() && ::pipe2(err, O_CLOEXEC) != 0) return Failed("pipe");
    // A log at a predictable name (--collect-logs): a link planted there is
    // not followed and a FIFO does not block (O_NOFOLLOW, O_NONBLOCK); only
    // a regular file is appended to.
    const int err_target =
        stderr_file.empty()
            ? err[1]
            : ::open(stderr_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (err_target < 0) return Failed("open " + stderr_file);
    if (!stderr_file.empty()) {
      struct stat st {};
      if (::fstat(err_target, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(err_target);
        errno = EINVAL;
        return Failed("open " + stderr_file + " (not a regular file)");
      }
    }
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(in[0], STDIN_FILENO);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err_target, STDERR_FILENO);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::execvp(args[0], args.data());
      static const char kFailed[] = "cannot run the command (not installed?)\n";
      (void)!::write(STDERR_FILENO, kFailed, sizeof(kFailed) - 1);
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    if (stderr_file.empty()) ::close(err[1]);
    if (!stderr_file.empty()) ::close(err_target);
    if (pid_ < 0) {
      ::close(in[1]);
      ::close(out[0]);
      if (err[0] >= 0) ::close(err[0]);
      return Failed("fork");
    }
    in_ = in[1];
    out_ = out[0];
    err_ = err[0];
    for (const int fd : {in_, out_, err_}) {
      if (fd >= 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    return true;
  }

  bool Write(const std::string& text) {
    std::size_t done = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (done < text.size() && in_ >= 0 && Clock::now() < deadline) {
      const ssize_t n = ::write(in_, text.data() + done, text.size() - done);
      if (n > 0) {
        done += static_cast<std::size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      } else {
        pollfd p{in_, POLLOUT, 0};
        ::poll(&p, 1, 100);
      }
    }
    return done == text.size();
  }
  void CloseInput() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }
  // Reads what is there on stdout and stderr without blocking.
  void Drain() {
    char buffer[4096];
    for (auto [fd, text] : {std::pair{&out_, &out_text_}, std::pair{&err_, &err_text_}}) {
      while (*fd >= 0) {
        const ssize_t n = ::read(*fd, buffer, sizeof(buffer));
        if (n > 0) {
          if (text->size() < 65536) text->append(buffer, static_cast<std::size_t>(n));
          continue;
        }
        if (n == 0) {
          ::close(*fd);
          *fd = -1;
        }
        break;
      }
    }
  }
  // The exit status once it ended (128 + signal when killed).
  std::optional<int> Poll() {
    if (status_ || pid_ <= 0) return status_;
    int raw = 0;
    if (::waitpid(pid_, &raw, WNOHANG) == pid_) {
      status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
      Drain();
    }
    return status_;
  }
  std::optional<int> Reap(Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!Poll() && pid_ > 0 && Clock::now() < deadline) {
      Drain();
      WaitReadable(std::chrono::milliseconds(50));
    }
    return status_;
  }
  void Kill() {
    if (pid_ > 0 && !status_) ::kill(-pid_, SIGTERM);
  }
  void WaitReadable(std::chrono::milliseconds timeout) {
    pollfd fds[2];
    int n = 0;
    for (const int fd : {out_, err_}) {
      if (fd >= 0) fds[n++] = {fd, POLLIN, 0};
    }
    if (n == 0) {
      ::usleep(static_cast<useconds_t>(timeout.count() * 1000));
      return;
    }
    ::poll(fds, n, static_cast<int>(timeout.count()));
  }
  const std::string& out() const { return out_text_; }
  const std::string& err() const { return err_text_; }
  const std::string& error() const { return error_; }
  bool running() const { return pid_ > 0 && !status_; }

 private:
  bool Failed(const std::string& what) {
    error_ = what + ": " + std::strerror(errno);
    return false;
  }
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::optional<int> status_;
  std::string out_text_, err_text_, error_;
};

// Runs one command per host at once and waits for all (or the timeout, or
// cancellation, which kill the rest); what each said and how it ended.
struct Outcome {
  std::optional<int> status;
  std::string out, err;
};
std::vector<Outcome> RunAll(const std::vector<std::vector<std::string>>& commands, Clock::duration timeout,
                            const std::function<bool()>& cancelled) {
  std::vector<std::unique_ptr<Child>> children;
  std::vector<Outcome> outcomes(commands.size());
  for (std::size_t i = 0; i < commands.size(); ++i) {
    children.push_back(std::make_unique<Child>());
    if (commands[i].empty() || !children.back()->Spawn(commands[i])) {
      outcomes[i].status = 127;
      outcomes[i].err = children.back()->error();
    }
  }
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline && !cancelled()) {
    bool all = true;
    for (auto& child : children) {
      child->Drain();
      if (child->running() && !child->Poll()) all = false;
    }
    if (all) break;
    ::usleep(20000);
  }
  for (std::size_t i = 0; i < children.size(); ++i) {
    if (outcomes[i].status) continue;
    children[i]->Kill();
    children[i]->Reap(std::chrono::seconds(2));
    outcomes[i] = {children[i]->Poll(), children[i]->out(), children[i]->err()};
  }
  return outcomes;
}

std::string Quote(const std::string& word) {
  std::string quoted = "'";
  for (const char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted.push_back(c);
    }
  }
  return quoted + "'";
}

std::string LastLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const auto newline = text.rfind('\n');
  return newline == std::string::npos ? text : text.substr(newline + 1);
}

std::string Why(const Outcome& outcome, const std::string& step) {
  if (!outcome.status) return step + ": no answer within the step's time limit";
  const std::string said = LastLine(outcome.err.empty() ? outcome.out : outcome.err);
  return step + " failed (exit " + std::to_string(*outcome.status) + ")" + (said.empty() ? "" : ": " + said);
}

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

  void Start(const std::vector<std::string>& destinations, const std::string& secret_line,
             const std::function<bool()>& cancelled) {
    for (const std::string& destination : destinations) hosts_.push_back({destination, "", "", "", ""});
    const auto step = std::chrono::duration_cast<Clock::duration>(options_.step_timeout);
    if (!options_.installed) {
      Say("creating a directory under " + options_.tmp_dir + " on " + std::to_string(hosts_.size()) + " hosts");
      std::vector<std::vector<std::string>> commands;
      for (const RemoteHost& host : hosts_) {
        commands.push_back(Ssh(host.destination, "mktemp -d " + Quote(options_.tmp_dir + "/hostperf.XXXXXX")));
      }
      const auto made = RunAll(commands, step, cancelled);
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
      Say("copying hostperf-peer to " + std::to_string(Ready()) + " hosts");
      commands.clear();
      for (const RemoteHost& host : hosts_) {
        commands.push_back(host.error.empty()
                               ? Scp(options_.peer_program, host.destination + ":" + host.directory + "/hostperf-peer")
                               : std::vector<std::string>{});
      }
      const auto copied = RunAll(commands, step, cancelled);
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        if (hosts_[i].error.empty() && copied[i].status != 0) hosts_[i].error = Why(copied[i], "scp");
      }
    }
    Say("starting hostperf-peer on " + std::to_string(Ready()) + " hosts");
    peers_.resize(hosts_.size());
    for (std::size_t i = 0; i < hosts_.size(); ++i) {
      RemoteHost& host = hosts_[i];
      if (!host.error.empty()) continue;
      const std::string program = options_.installed ? options_.installed_program : host.directory + "/hostperf-peer";
      std::string command = "exec " + Quote(program) + " --ports " + std::to_string(options_.port);
      if (!host.directory.empty()) command += " --remove-dir " + Quote(host.directory);
      host.log_file = LogFile(host.destination);
      peers_[i] = std::make_unique<Child>();
      if (!peers_[i]->Spawn(Ssh(host.destination, command), host.log_file)) {
        host.error = "ssh: " + peers_[i]->error();
        continue;
      }
      // The secret travels on the encrypted session's standard input only.
      peers_[i]->Write(secret_line + "\n");
    }
    const auto deadline = Clock::now() + step;
    while (Clock::now() < deadline && !cancelled()) {
      bool waiting = false;
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        RemoteHost& host = hosts_[i];
        if (!host.error.empty() || !host.target.empty()) continue;
        peers_[i]->Drain();
        const std::string& out = peers_[i]->out();
        if (out.find("hostperf-peer ready") != std::string::npos && out.find('\n') != std::string::npos) {
          host.target = HostOf(host.destination) + ":" + std::to_string(options_.port);
        } else if (peers_[i]->Poll()) {
          host.error = "hostperf-peer did not start: " + LastLine(ReadLog(host.log_file));
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
          RunAll(commands, std::chrono::duration_cast<Clock::duration>(options_.step_timeout), [] { return false; });
      for (std::size_t i = 0; i < hosts_.size(); ++i) {
        if (!hosts_[i].directory.empty() && removed[i].status != 0) {
          Say("could not remove " + hosts_[i].directory + " on " + hosts_[i].destination + ": " +
              Why(removed[i], "ssh rm"));
        }
      }
    }
    for (RemoteHost& host : hosts_) {
      if (host.log_file.empty()) continue;
      if (options_.collect_logs) {
        Say("log of " + host.destination + ": " + host.log_file);
      } else {
        std::error_code ec;
        std::filesystem::remove(host.log_file, ec);
        host.log_file.clear();
      }
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
  // With collect_logs, log_dir/hostperf-peer.<host>.log; otherwise a private
  // temporary file, removed at the end.
  std::string LogFile(const std::string& destination) {
    if (options_.collect_logs) {
      std::string name = destination;
      std::replace_if(
          name.begin(), name.end(), [](char c) { return !std::isalnum(c) && c != '.' && c != '-'; }, '_');
      return (std::filesystem::path(options_.log_dir) / ("hostperf-peer." + name + ".log")).string();
    }
    std::string path = (std::filesystem::temp_directory_path() / "hostperf-peer-log.XXXXXX").string();
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return "/dev/null";
    ::close(fd);
    return path;
  }
  static std::string ReadLog(const std::string& path) {
    auto text = ReadBoundedFile(path, "hostperf-peer log", 65536);
    return text ? std::move(text).value() : text.error();
  }

  RemoteOptions options_;
  std::function<void(const std::string&)> progress_;
  std::vector<RemoteHost> hosts_;
  std::vector<std::unique_ptr<Child>> peers_;  // the running ssh sessions, by host
  bool stopped_ = false;
};

}  // namespace

std::unique_ptr<RemotePeers> StartRemotePeers(const std::vector<std::string>& destinations, RemoteOptions options,
                                              const std::string& secret_line, const std::function<bool()>& cancelled,
                                              const std::function<void(const std::string&)>& progress) {
  auto peers = std::make_unique<RemotePeersImpl>(std::move(options), progress);
  peers->Start(destinations, secret_line, cancelled);
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
