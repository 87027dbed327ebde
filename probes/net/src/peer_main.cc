// hostperf-peer: the net probe's responder alone, as one statically linked
// program, for `hostperf net` on hosts where hostperf is not installed
// (vnetperf's bare-host use). `hostperf net --identity-file ...` copies it
// over SCP and starts it over SSH; it reads the shared secret from standard
// input (never from its command line or a file), and serves until its
// standard input closes: the SSH session that started it ended, whichever
// way the coordinator went (a clean end, Ctrl-C, a kill).
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/responder.h"

namespace {

using hostperf::probes::net::ResponderObserver;
using hostperf::probes::net::Secret;

constexpr const char* kUsage =
    "usage: hostperf-peer [--bind ADDRESS] [--ports PORT[,PORT...]] [--max-connections N]\n"
    "                     [--remove-dir DIR] [--help]\n"
    "\n"
    "The hostperf net responder alone, for `hostperf net` on hosts without hostperf\n"
    "(it copies this program there and starts it over SSH; not meant to be run by hand).\n"
    "Reads three lines from standard input: this host's secret (at least 16 bytes), the\n"
    "hex Ed25519 public key of the run's orchestration key (plans signed by it are\n"
    "taken; an empty line: none are) and the secret of the plans' sessions between\n"
    "hosts (empty: this host's secret). Then binds, prints \"hostperf-peer ready\n"
    "PORT...\" and serves until standard input closes or SIGTERM, SIGINT or SIGHUP comes.\n"
    "\n"
    "  --bind ADDRESS        numeric address to bind (default 0.0.0.0)\n"
    "  --ports LIST          TCP and UDP ports, comma-separated (default 14159; 0: any)\n"
    "  --max-connections N   TCP connections at once (default 64); a plan may name up to\n"
    "                        N - 1 peers (the CLI sizes it for the number of hosts)\n"
    "  --remove-dir DIR      on exit, remove DIR and the files in it (the copy made for\n"
    "                        this run; its name must start with \"hostperf.\")\n"
    "  --help                this text\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "hostperf-peer: %s (see --help)\n", error.c_str());
  return 2;
}

bool ParseUnsigned(std::string_view text, unsigned long max, unsigned long* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out <= max;
}

// Counts what the responder answered and dropped, for the log line at exit
// (`hostperf net --collect-logs` brings standard error back).
class Counts : public ResponderObserver {
 public:
  void OnRequest(std::string_view) override { ++requests_; }
  void OnDrop(std::string_view reason) override {
    ++drops_;
    if (logged_.fetch_add(1) < 20)
      std::fprintf(stderr, "hostperf-peer: dropped a request: %.*s\n", static_cast<int>(reason.size()), reason.data());
  }
  std::uint64_t requests() const { return requests_; }
  std::uint64_t drops() const { return drops_; }

 private:
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> drops_{0};
  std::atomic<int> logged_{0};
};

// Removes the run's directory: its regular files, then itself. Only a
// directory named like the ones `hostperf net` makes ("hostperf.XXXXXX").
void RemoveRunDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path path(dir);
  if (path.filename().string().rfind("hostperf.", 0) != 0) {
    std::fprintf(stderr, "hostperf-peer: not removing %s: not a hostperf run directory\n", dir.c_str());
    return;
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec) || entry.is_symlink(ec)) fs::remove(entry.path(), ec);
  }
  if (!fs::remove(path, ec) || ec)
    std::fprintf(stderr, "hostperf-peer: cannot remove %s: %s\n", dir.c_str(), ec ? ec.message().c_str() : "not empty");
}

// The command line into `options` and `remove_dir`: nullopt to go on, else
// the exit code (--help, or a usage error).
std::optional<int> ParseArgs(const std::vector<std::string>& args, hostperf::probes::net::ResponderOptions& options,
                             std::string& remove_dir) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const bool inline_value = name.find('=') != std::string::npos;
    if (inline_value) {
      value = name.substr(name.find('=') + 1);
      name = name.substr(0, name.find('='));
    }
    if (name == "--help" || name == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (name != "--bind" && name != "--ports" && name != "--max-connections" && name != "--remove-dir") {
      return Usage("unknown option " + name);
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return Usage(name + " needs a value");
      value = args[++i];
    }
    unsigned long number = 0;
    if (name == "--bind") {
      options.bind_address = value;
    } else if (name == "--ports") {
      options.ports.clear();
      for (std::size_t start = 0; start <= value.size();) {
        const std::size_t comma = std::min(value.find(',', start), value.size());
        if (!ParseUnsigned(std::string_view(value).substr(start, comma - start), 65535, &number)) {
          return Usage("--ports: \"" + value + "\" is not a list of port numbers");
        }
        options.ports.push_back(static_cast<std::uint16_t>(number));
        start = comma + 1;
      }
    } else if (name == "--max-connections") {
      if (!ParseUnsigned(value, 65535, &number) || number == 0) return Usage("--max-connections: not 1..65535");
      options.max_connections = static_cast<std::uint32_t>(number);
    } else {
      remove_dir = value;
    }
  }
  return std::nullopt;
}

// One line of standard input (read byte by byte: what follows it stays
// unread, for WaitForTheEnd), at most 4 KiB, trailing blanks removed.
std::string ReadLine() {
  std::string line;
  for (char c; line.size() <= 4096;) {
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line.push_back(c);
  }
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// The secret: the first line; nullopt when it is too short.
std::optional<Secret> ReadSecret() {
  std::string line = ReadLine();
  if (line.size() < 16) return std::nullopt;
  Secret secret(line.begin(), line.end());
  std::fill(line.begin(), line.end(), '\0');
  return secret;
}

// Serves until standard input closes or a signal comes on `signal_fd`; why it stopped.
std::string WaitForTheEnd(int signal_fd) {
  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {signal_fd, POLLIN, 0}};
  while (true) {
    if (::poll(fds, signal_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return std::string("poll: ") + std::strerror(errno);
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      (void)!::read(signal_fd, &info, sizeof(info));
      return std::string("signal ") + strsignal(static_cast<int>(info.ssi_signo));
    }
    if (fds[0].revents) {
      char buffer[256];
      const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof(buffer));
      if (n <= 0) return "standard input closed";  // anything else on standard input is ignored
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  hostperf::probes::net::ResponderOptions options;
  options.bind_address = "0.0.0.0";
  options.ports = {14159};
  // Plans come only from the CLI that started this peer (it alone holds the
  // run's orchestration key): their caps are that CLI's own bounds (--duration at
  // most 60 s, --datarate at most 100000 MB/s), not a daemon's defaults.
  options.plan_max_duration_ms = 60000;
  options.plan_max_rate = 100000ull << 20;
  // Sized by the CLI for the cluster and the connections test: the soft
  // limit on open files must not be what the test finds.
  hostperf::probes::net::RaiseOpenFileLimit();
  std::string remove_dir;
  if (const auto exit_code = ParseArgs(std::vector<std::string>(argv + 1, argv + argc), options, remove_dir)) {
    return *exit_code;
  }
  // The CLI signs the plans and sized the connection limit for its hosts.
  options.plan_max_sessions = std::max<std::uint32_t>(1, options.max_connections - 1);
  // The directory goes on every path out from here, errors included.
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (!dir.empty()) RemoveRunDirectory(dir);
    }
  } cleanup{remove_dir};

  auto secret = ReadSecret();
  if (!secret) {
    std::fprintf(stderr, "hostperf-peer: no secret on standard input (one line of at least 16 bytes)\n");
    return 1;
  }
  options.secret = std::move(*secret);
  const std::string key_line = ReadLine();
  if (!key_line.empty()) {
    options.orchestration_key = hostperf::probes::net::PublicKeyFromHex(key_line);
    if (!options.orchestration_key) {
      std::fprintf(stderr, "hostperf-peer: the second line is not a public key (64 hex digits)\n");
      return 1;
    }
  }
  std::string plan_line = ReadLine();
  if (!plan_line.empty()) {
    if (plan_line.size() < 16) {
      std::fprintf(stderr, "hostperf-peer: the plan secret (third line) is shorter than 16 bytes\n");
      return 1;
    }
    options.plan_secret = Secret(plan_line.begin(), plan_line.end());
    std::fill(plan_line.begin(), plan_line.end(), '\0');
  }

  // Signals are read from a descriptor, beside standard input.
  sigset_t signals;
  sigemptyset(&signals);
  for (const int signo : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, signo);
  sigaddset(&signals, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before the responder's thread: it inherits the mask
  sigdelset(&signals, SIGPIPE);
  const int signal_fd = ::signalfd(-1, &signals, SFD_CLOEXEC);

  Counts counts;
  options.observer = &counts;
  auto responder = hostperf::probes::net::StartResponder(options);
  if (!responder) {
    std::fprintf(stderr, "hostperf-peer: %s\n", responder.error().c_str());
    return 1;
  }
  std::string ready = "hostperf-peer ready";
  for (const std::uint16_t port : (*responder)->Ports()) ready += " " + std::to_string(port);
  std::printf("%s\n", ready.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "hostperf-peer: serving on %s, ports%s\n", options.bind_address.c_str(),
               ready.substr(std::strlen("hostperf-peer ready")).c_str());

  const std::string why = WaitForTheEnd(signal_fd);
  responder->reset();
  std::fprintf(stderr, "hostperf-peer: stopping (%s): %llu requests answered, %llu dropped\n", why.c_str(),
               static_cast<unsigned long long>(counts.requests()), static_cast<unsigned long long>(counts.drops()));
  return 0;
}
