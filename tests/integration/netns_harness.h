#pragma once

// Network namespaces for the net tests that need hosts of their own
// (net_mesh_test.cc, net_ssh_test.cc): iproute2 and tc driven as root.

#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {

inline std::string Find(const std::string& tool) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = dir + tool;
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// Runs an iproute2 (or other system) tool; on failure, the first error is
// kept in `error` (the command and what it said).
inline bool RunTool(const std::string& tool, const std::vector<std::string>& args, std::string* error) {
  const auto result = RunCommand(Find(tool), args, std::chrono::seconds(20));
  if (result.status != 0 && error->empty()) {
    std::ostringstream what;
    what << tool;
    for (const auto& a : args) what << " " << a;
    *error = what.str() + ": " + result.err;
  }
  return result.status == 0;
}

// A bridge in this namespace and `hosts` namespaces hanging off it by veth
// pairs, a /24 of 100.64.0.0/10 derived from the pid (apart from the other
// namespace tests' 198.18.0.0/15); removed on every
// path by the destructor (deleting a namespace deletes its veth end, and the
// pair with it).
class Mesh {
 public:
  explicit Mesh(int hosts) {
    const pid_t pid = ::getpid();
    tag_ = std::to_string(pid % 1000000);
    bridge_ = "hpmb" + tag_;
    subnet_ = "100." + std::to_string(64 + ((pid >> 8) & 63)) + "." + std::to_string(pid & 0xff) + ".";
    ok_ = Run("ip", {"link", "add", bridge_, "type", "bridge"}) &&
          Run("ip", {"addr", "add", subnet_ + "254/24", "dev", bridge_}) && Run("ip", {"link", "set", bridge_, "up"});
    bridge_made_ = ok_;
    for (int i = 0; ok_ && i < hosts; ++i) {
      const std::string ns = Namespace(i);
      if (!Run("ip", {"netns", "add", ns})) {
        ok_ = false;
        break;
      }
      namespaces_.push_back(ns);
      ok_ = Run("ip", {"link", "add", HostEnd(i), "type", "veth", "peer", "name", "eth0", "netns", ns}) &&
            Run("ip", {"link", "set", HostEnd(i), "master", bridge_}) && Run("ip", {"link", "set", HostEnd(i), "up"}) &&
            Run("ip", {"-n", ns, "addr", "add", Address(i) + "/24", "dev", "eth0"}) &&
            Run("ip", {"-n", ns, "link", "set", "eth0", "up"}) && Run("ip", {"-n", ns, "link", "set", "lo", "up"});
    }
  }
  ~Mesh() {
    // The links first: a namespace some process still holds outlives its
    // name, and its veth end with it.
    for (std::size_t i = 0; i < namespaces_.size(); ++i) Run("ip", {"link", "del", HostEnd(static_cast<int>(i))});
    for (const std::string& ns : namespaces_) Run("ip", {"netns", "del", ns});
    if (bridge_made_) Run("ip", {"link", "del", bridge_});
  }

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string Namespace(int i) const { return "hpmn" + tag_ + "-" + std::to_string(i); }
  std::string HostEnd(int i) const { return "hpmv" + tag_ + std::to_string(i); }
  std::string Address(int i) const { return subnet_ + std::to_string(i + 1); }

  // tbf on both ends of host i's veth: what it sends and what it receives.
  bool Shape(int i, const std::string& rate) {
    return Run("tc", {"qdisc", "add", "dev", HostEnd(i), "root", "tbf", "rate", rate, "burst", "32kbit", "latency",
                      "100ms"}) &&
           Run("ip", {"netns", "exec", Namespace(i), Find("tc"), "qdisc", "add", "dev", "eth0", "root", "tbf", "rate",
                      rate, "burst", "32kbit", "latency", "100ms"});
  }

  bool Run(const std::string& tool, const std::vector<std::string>& args) { return RunTool(tool, args, &error_); }

 private:
  std::string tag_, bridge_, subnet_, error_;
  std::vector<std::string> namespaces_;
  bool ok_ = false;
  bool bridge_made_ = false;
};

}  // namespace hostperf::testing
