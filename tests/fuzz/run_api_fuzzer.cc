// libFuzzer target for the run API's body: any bytes POSTed to /api/v1/runs.
// The body goes through RunApi::Handle (JSON parsing, RunManager::Submit,
// ParseFullRunRequest and every probe's option validation). Nothing may
// crash or throw, the answer must be a 4xx with a JSON {"error": "..."}, and
// options that parsed once must parse again as the run's record keeps them.
// Each input is handled on a thread with the stack of a CivetWeb worker
// (Debian's libcivetweb is built with USE_STACK_SIZE=102400, and hostperf
// does not change it; tests/exporter/http/worker_stack_test.cc checks that),
// so that recursion a worker cannot afford crashes here too (~870
// levels of nesting in options.<probe> once overflowed a worker).
#include <pthread.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/base/files.h"
#include "hostperf/config/units.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/full_run.h"
#include "hostperf/runs/run_api.h"
#include "hostperf/runs/run_manager.h"

namespace {

using namespace hostperf::runs;
using nlohmann::json;

// A daemon without probes: every request is validated in full, then refused
// as "not available", so no run ever starts.
struct Api {
  Api() {
    char dir_template[] = "/tmp/hostperf-run-api-fuzz-XXXXXX";
    if (mkdtemp(dir_template) == nullptr) std::abort();
    dir = dir_template;
    RunManagerOptions options;
    options.history_file = dir / "runs.json";
    manager = std::make_unique<RunManager>(std::vector<hostperf::probes::Probe*>{}, clock, RunManagerHooks{}, options);
    api = std::make_unique<RunApi>(*manager);
    api->SetToken("fuzz-token");
  }
  ~Api() {
    api.reset();
    manager.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::filesystem::path dir;
  hostperf::RealClock clock;
  std::unique_ptr<RunManager> manager;
  std::unique_ptr<RunApi> api;
};

// The record keeps the options and the duration as given; parsed again, they
// must still pass.
void CheckRevalidates(const std::string& body) {
  // Refused before parsing (the answer was a 4xx): nothing was kept.
  if (!hostperf::JsonDepthError(body).empty()) return;
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return;
  const auto request = ParseFullRunRequest(parsed);
  if (!request.ok()) {
    if (request.error().empty()) std::abort();
    return;
  }
  if (request->probes.empty()) std::abort();
  std::optional<std::chrono::nanoseconds> duration;
  if (request->duration) {
    const auto parsed_duration = hostperf::config::ParseDuration(*request->duration);
    if (!parsed_duration.ok()) std::abort();
    duration = *parsed_duration;
  }
  for (const std::string& probe : request->probes) {
    if (!request->parsed.contains(probe)) std::abort();
    const json given = request->options.value(probe, json());
    if (!hostperf::probes::ParseProbeOptions(probe, given, duration).ok()) std::abort();
  }
}

// The stack size of CivetWeb's worker threads.
constexpr std::size_t kWorkerStackBytes = 102400;

void HandleOne(const std::uint8_t* data, std::size_t size);

struct Input {
  const std::uint8_t* data;
  std::size_t size;
};

void* RunOnWorkerStack(void* arg) {
  const auto* input = static_cast<const Input*>(arg);
  HandleOne(input->data, input->size);
  return nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input input{data, size};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, kWorkerStackBytes) != 0) std::abort();
  pthread_t thread;
  if (pthread_create(&thread, &attr, RunOnWorkerStack, &input) != 0) std::abort();
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  return 0;
}

namespace {

void HandleOne(const std::uint8_t* data, std::size_t size) {
  static Api api;  // lives for the whole process, like the daemon's
  hostperf::http::HttpRequest request;
  request.method = "POST";
  request.path = std::string(kRunsPath);
  request.headers["authorization"] = "Bearer fuzz-token";
  request.body.assign(reinterpret_cast<const char*>(data), size);

  const hostperf::http::HttpResponse response = api.api->Handle(request);  // throws: a crash
  if (response.status < 400 || response.status >= 500) std::abort();
  const json answer = json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object() || !answer.contains("error") || !answer["error"].is_string()) std::abort();
  CheckRevalidates(request.body);
}

}  // namespace
