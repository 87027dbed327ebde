#include "daemon_fault_harness.h"

#include <filesystem>
#include <map>
#include <thread>

#include "hostperf/probes/disk/scratch.h"
#include "net_http_fault_harness.h"

namespace hostperf::testing {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

namespace {

// `prefix` (a wrapper such as `ip netns exec NAME`), then the daemon.
ChildProcess StartDaemon(const std::string& config_file, std::vector<std::string> prefix) {
  prefix.insert(prefix.end(),
                {HOSTPERF_EXPORTER_BIN, "--config.file=" + config_file, "--web.listen-address=127.0.0.1:0"});
  const std::string binary = prefix.front();
  return ChildProcess(binary, std::vector<std::string>(prefix.begin() + 1, prefix.end()));
}

}  // namespace

FaultDaemon::FaultDaemon(const std::string& config_file, const std::vector<std::string>& prefix)
    : process_(StartDaemon(config_file, prefix)) {}

int FaultDaemon::Port() {
  if (port_ == 0) port_ = process_.ListeningPort();
  return port_;
}

std::optional<HttpReply> FaultDaemon::Get(const std::string& path) {
  if (Port() == 0) return std::nullopt;
  return HttpRequest(Port(), "GET", path);
}

std::string FaultDaemon::Metrics() {
  const auto reply = Get("/metrics");
  return reply && reply->status == 200 ? reply->body : "";
}

double FaultDaemon::Value(const std::string& series) { return Sample(Metrics(), series).value_or(-1); }

bool FaultDaemon::WaitFor(const std::string& series, double at_least, milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (Value(series) >= at_least) return true;
    if (process_.Wait(milliseconds(0))) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return false;
}

HttpReply FaultDaemon::Call(const std::string& method, const std::string& path, const std::string& token,
                            const std::string& body) {
  std::map<std::string, std::string> headers = {{"Authorization", "Bearer " + token}};
  if (!body.empty()) headers["Content-Type"] = "application/json";
  return HttpRequest(Port(), method, path, headers, body).value_or(HttpReply{});
}

bool Eventually(const std::function<bool()>& condition, milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true;
}

std::vector<std::string> ScratchFilesUnder(const std::string& root) {
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(probes::disk::kScratchPrefix, 0) == 0) {
      found.push_back(it->path().string());
    }
  }
  return found;
}

}  // namespace hostperf::testing
