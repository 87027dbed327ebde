#include "remote_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

namespace hostperf::probes::net::remote {

Child::~Child() {
  Kill();
  Reap(std::chrono::seconds(2));
  CloseInput();
  for (int* fd : {&out_, &err_}) {
    if (*fd >= 0) ::close(*fd);
  }
}

bool Child::Spawn(const std::vector<std::string>& argv, int stderr_fd) {
  int in[2], out[2], err[2] = {-1, -1};
  if (::pipe2(in, O_CLOEXEC) != 0) return Failed("pipe");
  if (::pipe2(out, O_CLOEXEC) != 0) return Failed("pipe");
  if (stderr_fd < 0 && ::pipe2(err, O_CLOEXEC) != 0) return Failed("pipe");
  const int err_target = stderr_fd < 0 ? err[1] : stderr_fd;
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
  if (stderr_fd < 0) ::close(err[1]);
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

bool Child::Write(const std::string& text) {
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

void Child::CloseInput() {
  if (in_ >= 0) ::close(in_);
  in_ = -1;
}

void Child::Drain() {
  char buffer[4096];
  for (auto [fd, text] : {std::pair{&out_, &out_text_}, std::pair{&err_, &err_text_}}) {
    while (*fd >= 0) {
      const ssize_t n = ::read(*fd, buffer, sizeof(buffer));
      if (n > 0) {
        if (text->size() < max_output_) text->append(buffer, static_cast<std::size_t>(n));
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

std::optional<int> Child::Poll() {
  if (status_ || pid_ <= 0) return status_;
  int raw = 0;
  if (::waitpid(pid_, &raw, WNOHANG) == pid_) {
    status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    Drain();
  }
  return status_;
}

std::optional<int> Child::Reap(Clock::duration timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!Poll() && pid_ > 0 && Clock::now() < deadline) {
    Drain();
    WaitReadable(std::chrono::milliseconds(50));
  }
  return status_;
}

void Child::Kill() {
  if (pid_ > 0 && !status_) ::kill(-pid_, SIGTERM);
}

void Child::WaitReadable(std::chrono::milliseconds timeout) {
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

Result<Fd> OpenNamedLog(const std::string& path) {
  const auto failed = [&](const std::string& why) {
    return Result<Fd>(Failure{"bad_log", "open " + path + why + ": " + std::strerror(errno)});
  };
  // O_RDWR: the log's end is read back when the peer does not start.
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd.valid()) return failed("");
  struct stat st {};
  const bool stated = ::fstat(fd.get(), &st) == 0;
  const char* why = !stated || !S_ISREG(st.st_mode) ? "not a regular file"
                    : st.st_uid != ::geteuid()      ? "owned by another user"
                    : st.st_nlink != 1              ? "a hard link to another file"
                                                    : nullptr;
  if (why != nullptr) {
    errno = EINVAL;
    return failed(std::string(" (") + why + ")");
  }
  return fd;
}

Result<Fd> OpenAnonymousLog(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (fd.valid()) return fd;
  // A file system without O_TMPFILE: a name that lives only between mkstemp and unlink.
  std::string path = dir + "/hostperf-peer-log.XXXXXX";
  fd = Fd(::mkostemp(path.data(), O_CLOEXEC));
  if (!fd.valid()) return Failure{"bad_log", "cannot create a log file in " + dir + ": " + std::strerror(errno)};
  ::unlink(path.c_str());
  return fd;
}

std::string ReadLogTail(int fd, std::size_t max_bytes) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return "";
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::size_t start = size > max_bytes ? size - max_bytes : 0;
  std::string text(size - start, '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(start + done));
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return text;
}

bool Child::Failed(const std::string& what) {
  error_ = what + ": " + std::strerror(errno);
  return false;
}

std::vector<Outcome> RunAll(const std::vector<std::vector<std::string>>& commands, Clock::duration timeout,
                            const std::function<bool()>& cancelled, std::size_t parallel,
                            const std::function<void(std::size_t, const Outcome&)>& on_done) {
  parallel = std::max<std::size_t>(parallel, 1);
  std::vector<std::unique_ptr<Child>> children(commands.size());
  std::vector<Clock::time_point> deadlines(commands.size());
  std::vector<Outcome> outcomes(commands.size());
  std::vector<bool> done(commands.size(), false);
  const auto finish = [&](std::size_t i, Outcome outcome) {
    outcomes[i] = std::move(outcome);
    done[i] = true;
    if (on_done) on_done(i, outcomes[i]);
  };
  std::size_t next = 0, running = 0;
  while (true) {
    // Start more, up to `parallel` at once (an empty command is nothing to run).
    while (next < commands.size() && running < parallel && !cancelled()) {
      const std::size_t i = next++;
      children[i] = std::make_unique<Child>();
      if (commands[i].empty() || !children[i]->Spawn(commands[i])) {
        finish(i, {127, "", children[i]->error()});
        continue;
      }
      deadlines[i] = Clock::now() + timeout;
      ++running;
    }
    if (running == 0) break;
    for (std::size_t i = 0; i < next; ++i) {
      if (done[i]) continue;
      Child& child = *children[i];
      child.Drain();
      if (child.Poll()) {
        finish(i, {child.Poll(), child.out(), child.err()});
        --running;
      } else if (cancelled() || Clock::now() >= deadlines[i]) {
        child.Kill();
        child.Reap(std::chrono::seconds(2));
        finish(i, {child.Poll(), child.out(), child.err()});
        --running;
      }
    }
    ::usleep(20000);
  }
  for (std::size_t i = next; i < commands.size(); ++i) finish(i, {std::nullopt, "", "cancelled"});
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

}  // namespace hostperf::probes::net::remote
