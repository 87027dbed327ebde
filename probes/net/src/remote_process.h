#pragma once

// The child processes of `hostperf net` over SSH (remote.cc): ssh and scp
// run with pipes on their standard streams, one per host at once. Internal
// to the net probe.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net::remote {

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
  ~Child();

  // `stderr_fd`: the child's standard error goes there (the caller keeps
  // it; -1: a pipe, read into err()).
  bool Spawn(const std::vector<std::string>& argv, int stderr_fd = -1);
  // Writes all of `text` to its standard input (10 s at most).
  bool Write(const std::string& text);
  void CloseInput();
  // Reads what is there on stdout and stderr without blocking.
  void Drain();
  // The exit status once it ended (128 + signal when killed).
  std::optional<int> Poll();
  // Waits up to `timeout` for it to end; its status, or nullopt.
  std::optional<int> Reap(Clock::duration timeout);
  // SIGTERM to its process group, unless it ended.
  void Kill();
  void WaitReadable(std::chrono::milliseconds timeout);
  // The most of stdout and of stderr kept (64 KiB unless set before Spawn).
  void SetOutputLimit(std::size_t bytes) { max_output_ = bytes; }
  const std::string& out() const { return out_text_; }
  const std::string& err() const { return err_text_; }
  const std::string& error() const { return error_; }
  bool running() const { return pid_ > 0 && !status_; }

 private:
  bool Failed(const std::string& what);
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  std::optional<int> status_;
  std::string out_text_, err_text_, error_;
  std::size_t max_output_ = 65536;
};

// A peer's log at a predictable name (--collect-logs), opened to append:
// a symbolic link planted there is not followed and a FIFO does not block;
// only a regular file of ours with no other name is used. The failure is
// "open <path> (<why>)...".
Result<Fd> OpenNamedLog(const std::string& path);
// A peer's log that has no name (O_TMPFILE in `dir`, else a file unlinked
// right after mkstemp): nothing to remove, even after kill -9.
Result<Fd> OpenAnonymousLog(const std::string& dir);
// The end of a log (at most `max_bytes`), as written so far.
std::string ReadLogTail(int fd, std::size_t max_bytes);

// Runs one command per host, at most `parallel` at once (gpssh's bounded
// fan-out: hundreds of hosts are not hundreds of SSH handshakes in one
// instant), and waits for all; each has `timeout` from its own start, and
// cancellation kills the running ones and starts no more. What each said
// and how it ended; `on_done` as each ends, in the calling thread.
struct Outcome {
  std::optional<int> status;
  std::string out, err;
};
inline constexpr std::size_t kDefaultSshParallel = 64;
std::vector<Outcome> RunAll(const std::vector<std::vector<std::string>>& commands, Clock::duration timeout,
                            const std::function<bool()>& cancelled, std::size_t parallel = kDefaultSshParallel,
                            const std::function<void(std::size_t, const Outcome&)>& on_done = {});

// `word` in single quotes for a remote shell.
std::string Quote(const std::string& word);
// The last non-empty line of `text`.
std::string LastLine(std::string text);
// Why a step failed: "<step> failed (exit N): <its last line>", or its timeout.
std::string Why(const Outcome& outcome, const std::string& step);

}  // namespace hostperf::probes::net::remote
