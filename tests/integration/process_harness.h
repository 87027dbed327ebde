#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hostperf::testing {

// The whole of a file the test or a child wrote; "" when it cannot be read.
std::string ReadText(const std::string& path);

// A child process with stdout and stderr captured to files, so that tests can
// read what it said while it runs.
class ChildProcess {
 public:
  // With `input`, standard input is a pipe that carries it and stays open
  // until this object goes (or CloseInput()); else /dev/null.
  ChildProcess(std::string binary, std::vector<std::string> args, std::map<std::string, std::string> env = {},
               std::optional<std::string> input = std::nullopt);
  ~ChildProcess();  // SIGKILLs the child if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string Stdout() const;
  std::string Stderr() const;
  void Signal(int signo) const;
  void CloseInput();
  // Exit status (or 128+signal) once the child ends within `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // Polls stderr until `needle` appears (true) or the child exits or the
  // timeout passes (false).
  bool WaitForStderr(const std::string& needle, std::chrono::milliseconds timeout);
  // hostperf_exporter's HTTP port, from its "listening on ... (port N)" log
  // line (started with --web.listen-address=127.0.0.1:0); 0 if it never came.
  int ListeningPort(std::chrono::milliseconds timeout = std::chrono::seconds(30));

 private:
  pid_t pid_ = -1;
  int input_fd_ = -1;  // the write end of standard input's pipe
  std::optional<int> exit_status_;
  std::string stdout_path_;
  std::string stderr_path_;
};

// Runs a command to completion; returns its exit status and output.
struct CommandResult {
  int status = -1;
  std::string out;
  std::string err;
};
CommandResult RunCommand(const std::string& binary, const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout);

struct HttpReply {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};
// Minimal HTTP/1.1 client over a fresh connection (Connection: close).
std::optional<HttpReply> HttpRequest(int port, const std::string& method, const std::string& path,
                                     const std::map<std::string, std::string>& headers = {},
                                     const std::string& body = "");

// The hostperf-peer built beside the CLI (the program `hostperf net` copies to bare hosts).
std::string PeerProgram();

// A port free for both TCP and UDP on 127.0.0.1 right now (0 if none found).
std::uint16_t FreeLoopbackPort();

// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  // Writes `name` (mode 0600) and returns its path.
  std::string Write(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

}  // namespace hostperf::testing
