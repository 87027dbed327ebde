#pragma once
// Bare hosts reachable over SSH for the tests of `hostperf net` and
// `hostperf check` on hosts with nothing installed (net_ssh_test.cc,
// check_ssh_test.cc): network namespaces on a bridge (Mesh), each running
// Debian's real OpenSSH server on a port of its own with a test host key and
// one authorized test key, and nothing of hostperf. As root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "netns_harness.h"
#include "process_harness.h"

namespace hostperf::testing {

class SshHosts {
 public:
  // Why these hosts cannot be made here (not root, tools missing); empty
  // when they can.
  static std::string Unavailable() {
    if (::geteuid() != 0) return "needs root for ip netns and sshd";
    if (Find("ip").empty() || Find("sshd").empty() || Find("ssh-keygen").empty() || Find("ssh").empty()) {
      return "needs iproute2 and OpenSSH (openssh-server, openssh-client)";
    }
    return "";
  }

  // `hosts` namespaces, keys and configs under `dir`; ok() once every
  // sshd answers, else error() says why.
  SshHosts(int hosts, const TempDir& dir) : dir_(dir.path()), mesh_(std::make_unique<Mesh>(hosts)) {
    if (!mesh_->ok()) {
      error_ = "cannot set up network namespaces on a bridge here: " + mesh_->error();
      return;
    }
    std::filesystem::create_directories("/run/sshd");  // sshd's privilege separation directory
    const std::string keygen = Find("ssh-keygen");
    for (const char* key : {"host_key", "client_key"}) {
      if (RunCommand(keygen, {"-q", "-t", "ed25519", "-N", "", "-f", dir_ + "/" + key}, kWait).status != 0) {
        error_ = "ssh-keygen failed";
        return;
      }
    }
    std::ifstream pub(dir_ + "/client_key.pub");
    const std::string key((std::istreambuf_iterator<char>(pub)), std::istreambuf_iterator<char>());
    std::ofstream(dir_ + "/authorized_keys") << key;
    port_ = FreeLoopbackPort();
    for (int i = 0; i < hosts; ++i) {
      const std::string config = dir_ + "/sshd" + std::to_string(i) + ".conf";
      std::ofstream(config) << "Port " << port_ << "\nListenAddress " << mesh_->Address(i) << "\nHostKey " << dir_
                            << "/host_key\nAuthorizedKeysFile " << dir_
                            << "/authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                               "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile "
                            << dir_ << "/sshd" << i << ".pid\nSubsystem sftp internal-sftp\n";
      sshd_.push_back(std::make_unique<ChildProcess>(
          Find("ip"),
          std::vector<std::string>{"netns", "exec", mesh_->Namespace(i), Find("sshd"), "-D", "-e", "-f", config}));
    }
    // Each sshd answers before the test goes on.
    for (int i = 0; i < hosts; ++i) {
      bool up = false;
      for (int attempt = 0; attempt < 100 && !up; ++attempt) {
        up = RunCommand(Find("ssh"), SshArgs(i, "true"), kWait).status == 0;
        if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      if (!up) {
        error_ = "sshd in " + mesh_->Namespace(i) + " does not answer: " + sshd_[i]->Stderr();
        return;
      }
    }
  }
  ~SshHosts() {
    sshd_.clear();
    mesh_.reset();
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  Mesh& mesh() { return *mesh_; }
  std::string Address(int host) const { return mesh_->Address(host); }
  std::string Destination(int host) const { return "root@" + mesh_->Address(host); }
  std::uint16_t port() const { return port_; }
  std::string client_key() const { return dir_ + "/client_key"; }
  // Stops host i's sshd: that host can no longer be reached.
  void StopSshd(int host) { sshd_.at(host).reset(); }

  // For the CLI's --ssh-options and --scp-options: no host key prompts.
  static std::string CommonOptions() {
    return "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR";
  }
  std::string SshOptions() const { return "-p " + std::to_string(port_) + " " + CommonOptions(); }
  std::string ScpOptions() const { return "-P " + std::to_string(port_) + " " + CommonOptions(); }
  // ssh's arguments to run `command` on host i as root.
  std::vector<std::string> SshArgs(int host, const std::string& command) const {
    return {"-p",
            std::to_string(port_),
            "-i",
            client_key(),
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            Destination(host),
            command};
  }

 private:
  static constexpr std::chrono::seconds kWait{30};
  std::string dir_;
  std::unique_ptr<Mesh> mesh_;
  std::vector<std::unique_ptr<ChildProcess>> sshd_;
  std::uint16_t port_ = 0;
  std::string error_;
};

// The names in `dir` (none when it is missing).
inline std::vector<std::string> DirectoryEntries(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

// A fixture with `kHosts` bare hosts: skipped where they cannot be made
// (not root, no OpenSSH, no namespaces), failed when an sshd does not answer.
// A derived SetUp calls this one first and returns if IsSkipped() or
// HasFatalFailure().
template <int kHosts>
class SshHostsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = SshHosts::Unavailable(); !why.empty()) GTEST_SKIP() << why;
    hosts_ = std::make_unique<SshHosts>(kHosts, dir_);
    if (!hosts_->ok()) {
      if (!hosts_->mesh().ok()) GTEST_SKIP() << hosts_->error();
      FAIL() << hosts_->error();
    }
  }
  void TearDown() override { hosts_.reset(); }
  bool Ready() const { return !IsSkipped() && !HasFatalFailure(); }

  TempDir dir_;
  std::unique_ptr<SshHosts> hosts_;
};

}  // namespace hostperf::testing
