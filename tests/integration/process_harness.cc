#include "process_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "hostperf/base/files.h"

namespace hostperf::testing {
namespace {

int DecodeStatus(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return -1;
}

std::string TempPath(const std::string& prefix) {
  std::string templ = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
  const int fd = mkstemp(templ.data());
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  return templ;
}

}  // namespace

std::string ReadText(const std::string& path) { return ReadFile(path).value_or(""); }

ChildProcess::ChildProcess(std::string binary, std::vector<std::string> args, std::map<std::string, std::string> env,
                           std::optional<std::string> input)
    : stdout_path_(TempPath("hostperf-out-")), stderr_path_(TempPath("hostperf-err-")) {
  // Close-on-exec: no other child may hold the write end, or this one
  // never sees its input end.
  int pipe_fds[2] = {-1, -1};
  if (input) {
    // Written at once below: within a pipe's buffer.
    if (input->size() > 60 * 1024) throw std::invalid_argument("ChildProcess: input above 60 KiB");
    // A child that exits before reading must not kill the test with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) pipe_fds[0] = pipe_fds[1] = -1;
  }
  pid_ = fork();
  if (pid_ == 0) {
    const int out = open(stdout_path_.c_str(), O_WRONLY | O_TRUNC);
    const int err = open(stderr_path_.c_str(), O_WRONLY | O_TRUNC);
    const int null = open("/dev/null", O_RDONLY);
    dup2(pipe_fds[0] >= 0 ? pipe_fds[0] : null, 0);
    dup2(out, 1);
    dup2(err, 2);
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    // The test runner may block signals; the child must start clean.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> argv;
    argv.push_back(binary.data());
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  if (pipe_fds[0] >= 0) {
    close(pipe_fds[0]);
    if (pid_ < 0) {
      close(pipe_fds[1]);
      return;
    }
    input_fd_ = pipe_fds[1];
    // Small enough for the pipe's buffer: written at once.
    (void)!write(input_fd_, input->data(), input->size());
  }
}

void ChildProcess::CloseInput() {
  if (input_fd_ >= 0) close(input_fd_);
  input_fd_ = -1;
}

ChildProcess::~ChildProcess() {
  CloseInput();
  if (pid_ > 0 && !exit_status_) {
    kill(pid_, SIGKILL);
    int raw = 0;
    waitpid(pid_, &raw, 0);
  }
  std::filesystem::remove(stdout_path_);
  std::filesystem::remove(stderr_path_);
}

std::string ChildProcess::Stdout() const { return ReadText(stdout_path_); }
std::string ChildProcess::Stderr() const { return ReadText(stderr_path_); }
void ChildProcess::Signal(int signo) const { kill(pid_, signo); }

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_status_) return exit_status_;
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int raw = 0;
    if (waitpid(pid_, &raw, WNOHANG) == pid_) {
      exit_status_ = DecodeStatus(raw);
      return exit_status_;
    }
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int ChildProcess::ListeningPort(std::chrono::milliseconds timeout) {
  if (!WaitForStderr("(port ", timeout)) return 0;
  std::smatch match;
  const std::string err = Stderr();
  return std::regex_search(err, match, std::regex(R"(\(port (\d+)\))")) ? std::stoi(match[1]) : 0;
}

bool ChildProcess::WaitForStderr(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (Stderr().find(needle) != std::string::npos) return true;
    if (Wait(std::chrono::milliseconds(0))) return Stderr().find(needle) != std::string::npos;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

CommandResult RunCommand(const std::string& binary, const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout) {
  ChildProcess child(binary, args);
  CommandResult result;
  result.status = child.Wait(timeout).value_or(-1);
  result.out = child.Stdout();
  result.err = child.Stderr();
  return result;
}

std::optional<HttpReply> HttpRequest(int port, const std::string& method, const std::string& path,
                                     const std::map<std::string, std::string>& headers, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  timeval tv{30, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return std::nullopt;
  }
  std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST") request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  request += "\r\n" + body;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return std::nullopt;
  }
  std::string raw;
  char buffer[16384];
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd);
  const auto header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || raw.rfind("HTTP/1.", 0) != 0) return std::nullopt;
  HttpReply reply;
  reply.status = std::atoi(raw.c_str() + 9);
  std::istringstream lines(raw.substr(0, header_end));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(value.begin());
    reply.headers[name] = value;
  }
  reply.body = raw.substr(header_end + 4);
  return reply;
}

namespace {

// Whether `port` on 127.0.0.1 can be bound for TCP (as the daemon binds it,
// SO_REUSEADDR) and for UDP right now.
bool LoopbackPortIsFree(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const auto* raw = reinterpret_cast<const sockaddr*>(&address);
  const int tcp = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  const bool tcp_free = tcp >= 0 && ::setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
                        ::bind(tcp, raw, sizeof(address)) == 0;
  const int udp = tcp_free ? ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) : -1;
  const bool free = udp >= 0 && ::bind(udp, raw, sizeof(address)) == 0;
  if (tcp >= 0) ::close(tcp);
  if (udp >= 0) ::close(udp);
  return free;
}

// The first port of the kernel's ephemeral range (32768 by default).
int EphemeralPortsStart() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  return in >> low && low > 4096 ? low : 32768;
}

}  // namespace

std::string PeerProgram() { return (std::filesystem::path(HOSTPERF_CLI_BIN).parent_path() / "hostperf-peer").string(); }

std::uint16_t FreeLoopbackPort() {
  // Chosen below the ephemeral range: between this check and the daemon's
  // bind, another test's outgoing connection cannot take the port, as it can
  // take one the kernel handed out for bind(0).
  static thread_local std::mt19937 rng(std::random_device{}());
  const int high = EphemeralPortsStart() - 1;
  std::uniform_int_distribution<int> pick(std::max(1024, high - 12000), high);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(rng);
    if (LoopbackPortIsFree(port)) return static_cast<std::uint16_t>(port);
  }
  return 0;
}

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "hostperf-test-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& content) const {
  const std::string file = path_ + "/" + name;
  std::ofstream(file, std::ios::binary) << content;
  // Owner-only, as an operator keeps a token_file or secret_file (the daemon
  // refuses secrets that group or others can read); a test that wants a loose
  // mode chmods after.
  std::filesystem::permissions(file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return file;
}

}  // namespace hostperf::testing
