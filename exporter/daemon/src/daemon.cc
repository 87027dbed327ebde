#include "hostperf/daemon/daemon.h"

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>

#include "hostperf/daemon/collectors.h"
#include "hostperf/daemon/landing_page.h"
#include "hostperf/http/exposition.h"
#include "hostperf/http/web_security.h"
#include "hostperf/probes/build_info.h"

namespace hostperf::daemon {
namespace {

// The exporter's documented default port (--web.listen-address).
constexpr unsigned kDefaultExporterPort = 9580;

class SystemdNotifier final : public ServiceNotifier {
 public:
  void Notify(std::string_view state) override {
    const std::string text(state);
    sd_notify(0, text.c_str());
  }
  std::optional<std::chrono::microseconds> WatchdogPeriod() override {
    std::uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) return std::chrono::microseconds(usec);
    return std::nullopt;
  }
};

// malloc_trim(0) once the HTTP server has gone idle. A scrape's buffers are
// freed by then, but glibc keeps their pages, scattered between live blocks,
// resident until the next probe run trims. Spaced so that trimming takes at
// most 1 % of the time whatever the request rate; a skipped trim leaves at
// most the requests since the last.
class IdleTrimmer {
 public:
  void operator()() {
    const auto started = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(mu_);
      if (trimming_ || started < next_) return;
      trimming_ = true;
    }
    (void)::malloc_trim(0);
    const auto finished = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    trimming_ = false;
    next_ = finished + 100 * (finished - started);
  }

 private:
  std::mutex mu_;
  bool trimming_ = false;
  std::chrono::steady_clock::time_point next_;
};

std::uint64_t MonotonicMicros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000 + static_cast<std::uint64_t>(ts.tv_nsec) / 1000;
}

http::HttpResponse MethodNotAllowed(const char* allow) {
  auto response = http::HttpResponse::Text(405, std::string("method not allowed; use ") + allow);
  response.headers.emplace_back("Allow", allow);
  return response;
}

}  // namespace

bool IsReservedPath(const std::string& path) {
  if (path == "/" || path.rfind("/-/", 0) == 0 || path == "/-") return true;
  const std::string runs(runs::kRunsPath);
  return path == runs || path.rfind(runs + "/", 0) == 0;
}

Result<void> CheckTelemetryPath(const std::string& path) {
  const auto bad = [&](const std::string& why) {
    return Result<void>::Error("bad_config", "--web.telemetry-path \"" + path + "\" " + why);
  };
  if (path.empty() || path.front() != '/') return bad("must start with /");
  for (const unsigned char c : path) {
    if (c <= ' ' || c == 0x7f || c == '?' || c == '#' || c == '%') {
      return bad("must be a plain path (no query, fragment, escapes, spaces or control characters)");
    }
  }
  if (path.size() > 1 && path.back() == '/') return bad("must not end with /");
  if (IsReservedPath(path)) {
    return bad("collides with an endpoint of hostperf_exporter (/, /-/healthy, /-/ready, /-/reload, " +
               std::string(runs::kRunsPath) + ")");
  }
  return {};
}

std::unique_ptr<ServiceNotifier> MakeSystemdNotifier() { return std::make_unique<SystemdNotifier>(); }

Result<config::Config> LoadDaemonConfig(const std::optional<std::filesystem::path>& config_file) {
  auto loaded = config_file ? probes::LoadConfigFile(*config_file) : Result<config::Config>(probes::DefaultConfig());
  if (!loaded) return loaded;
  // [full_runs]' options go through each probe's own parser here, so that a
  // bad option is fatal at start (and refused by a reload), not at its slot.
  const config::FullRunsConfig& calendar = loaded->full_runs;
  if (calendar.enabled || !calendar.probes.empty()) {
    if (auto body = runs::CalendarRunBody(calendar); !body) {
      return Result<config::Config>::Error("bad_config", loaded->source + ": " + body.error());
    }
  }
  return loaded;
}

namespace {

// Why the state directory could not be created (or used) at start, without
// creating it: it, or the nearest part of its path that exists, must be a
// directory this process can write into.
std::optional<std::string> StateDirectoryError(const std::filesystem::path& directory) {
  std::error_code ec;
  std::filesystem::path existing = directory;
  while (!std::filesystem::exists(existing, ec) && existing.has_parent_path() && existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  const std::string where = "state directory " + directory.string();
  if (!std::filesystem::is_directory(existing, ec)) {
    return where + ": " + existing.string() + " is not a directory";
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    return where + ": " + (existing == directory ? "not writable" : "cannot be created in " + existing.string()) +
           " by this user (" + std::strerror(errno) + ")";
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> StartErrors(const config::Config& config, const DaemonOptions& options) {
  std::vector<std::string> errors;
  if (auto token = Daemon::LoadApiToken(config); !token) errors.push_back(token.error());
  if (auto state = StateDirectoryError(config::ResolveStateDirectory(config))) errors.push_back(std::move(*state));
  probes::StartFacts facts;
  facts.exporter_ports.push_back(kDefaultExporterPort);
  const auto colon = options.listen_address.rfind(':');
  if (colon != std::string::npos) {
    const std::string digits = options.listen_address.substr(colon + 1);
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec == std::errc() && end == digits.data() + digits.size() && port > 0 && port <= 65535) {
      facts.listen_port = static_cast<std::uint16_t>(port);
      if (port != kDefaultExporterPort) facts.exporter_ports.push_back(facts.listen_port);
    }
  }
  for (std::string& error : probes::ConfigErrors(config, facts)) errors.push_back(std::move(error));
  return errors;
}

Daemon::Daemon(DaemonOptions options, std::shared_ptr<const config::Config> config,
               std::unique_ptr<ServiceNotifier> notifier)
    : options_(std::move(options)), notifier_(std::move(notifier)), config_(std::move(config)) {}

Daemon::~Daemon() {
  // The server calls into the scheduler and probes: stop it first. Then the
  // run manager, which cancels an active full run and resumes the scheduler.
  server_.reset();
  calendar_.reset();
  run_manager_.reset();
}

Result<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options, std::shared_ptr<const config::Config> config,
                                               std::unique_ptr<ServiceNotifier> notifier) {
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(options), std::move(config), std::move(notifier)));
  if (auto started = daemon->Start(); !started) return started.failure();
  return Result<std::unique_ptr<Daemon>>(std::move(daemon));
}

Result<std::optional<std::string>> Daemon::LoadApiToken(const config::Config& config) {
  using R = Result<std::optional<std::string>>;
  if (config.api.token_file.empty()) return R(std::nullopt);
  auto token = runs::ReadApiToken(config.api.token_file);
  if (!token) return token.failure();
  return R(std::optional<std::string>(std::move(token).value()));
}

Result<void> Daemon::Start() {
  if (const std::vector<std::string> errors = StartErrors(*config_, options_); !errors.empty()) {
    std::string message;
    for (const std::string& error : errors) message += (message.empty() ? "" : "; ") + error;
    return Result<void>::Error("bad_config", message);
  }
  auto token = LoadApiToken(*config_);
  if (!token) return token.failure();
  if (auto created = CreateStateDirectory(); !created) return created;
  RegisterMetrics();
  StartProbes();
  StartScheduler();
  StartRuns(std::move(token).value());
  return StartHttp();
}

Result<void> Daemon::CreateStateDirectory() {
  state_directory_ = config::ResolveStateDirectory(*config_);
  std::error_code ec;
  std::filesystem::create_directories(state_directory_, ec);
  if (ec) {
    return Result<void>::Error("io_error",
                               "cannot create state directory " + state_directory_.string() + ": " + ec.message());
  }
  spdlog::info("state directory {}", state_directory_.string());
  return {};
}

void Daemon::RegisterMetrics() {
  registry_ = std::make_shared<prometheus::Registry>();
  framework_metrics_ = std::make_unique<FrameworkMetrics>(*registry_);
  prometheus::BuildGauge()
      .Name("hostperf_build_info")
      .Help("Build facts as labels; value is always 1. fingerprint keys the per-binary CPU baselines.")
      .Register(*registry_)
      .Add({{"version", build_info::kVersion},
            {"revision", build_info::kRevision},
            {"compiler", build_info::kCompiler},
            {"compiler_version", build_info::kCompilerVersion},
            {"build_flags", build_info::kBuildFlags},
            {"fingerprint", build_info::kFingerprint}})
      .Set(1);
  reload_successful_ = &prometheus::BuildGauge()
                            .Name("hostperf_config_last_reload_successful")
                            .Help("1 if the last config load (start-up or reload) succeeded, else 0.")
                            .Register(*registry_)
                            .Add({});
  reload_timestamp_ = &prometheus::BuildGauge()
                           .Name("hostperf_config_last_reload_success_timestamp_seconds")
                           .Help("Unix time of the last successful config load.")
                           .Register(*registry_)
                           .Add({});
  reload_successful_->Set(1);
  reload_timestamp_->Set(clock_.UnixSeconds());
  connections_evicted_ =
      &prometheus::BuildCounter()
           .Name("hostperf_http_connections_evicted_total")
           .Help(
               "Web connections shut down because their source address held more than the per-source limit "
               "(the oldest one not inside a request goes).")
           .Register(*registry_)
           .Add({});
}

void Daemon::StartProbes() {
  probes::ProbeDeps deps;
  deps.registry = registry_.get();
  deps.roots = options_.roots;
  deps.state_directory = state_directory_;
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    probes_.push_back(module->create(deps));
    probes_.back()->StartServices(config_->Section(module->name));
  }
}

void Daemon::StartScheduler() {
  std::vector<probes::Probe*> scheduled;
  for (const auto& probe : probes_) scheduled.push_back(probe.get());
  ImpactGateOptions gate_options;
  gate_options.proc_root = options_.roots.proc;
  impact_gate_ = std::make_unique<ImpactGate>(clock_, std::move(gate_options), *registry_);
  scheduler_ = std::make_unique<Scheduler>(std::move(scheduled), clock_, *framework_metrics_, std::random_device{}(),
                                           impact_gate_.get());
  scheduler_->ApplyConfig(config_);
}

void Daemon::StartRuns(std::optional<std::string> token) {
  runs::RunManagerHooks hooks;
  hooks.pause_scheduler = [this] { scheduler_->Pause(); };
  hooks.resume_scheduler = [this] { scheduler_->Resume(); };
  hooks.config = [this] {
    std::lock_guard lock(config_mu_);
    return config_;
  };
  runs::RunManagerOptions run_options;
  run_options.history_file = state_directory_ / "runs.json";
  std::vector<probes::Probe*> full_run_probes;
  for (const auto& probe : probes_) full_run_probes.push_back(probe.get());
  run_manager_ =
      std::make_unique<runs::RunManager>(std::move(full_run_probes), clock_, std::move(hooks), std::move(run_options));
  calendar_ = std::make_unique<runs::FullRunCalendar>(
      clock_, [this](const nlohmann::json& body) { return run_manager_->Submit(body, "calendar"); },
      options_.host_identity);
  calendar_->Apply(*config_);
  run_api_ = std::make_unique<runs::RunApi>(*run_manager_);
  run_api_->SetToken(std::move(token));
  spdlog::info("run API {}", run_api_->enabled() ? "enabled" : "disabled (api.token_file is not set)");
}

std::map<std::string, http::HttpHandler> Daemon::Routes() {
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables = {
      registry_, std::make_shared<ProcessCollector>(options_.roots),
      std::make_shared<HostFactsCollector>(options_.roots, std::chrono::seconds(15)), run_manager_->Metrics(),
      calendar_->Metrics()};
  if (options_.web_security) collectables.push_back(options_.web_security);  // auth failures, web config reloads
  std::map<std::string, http::HttpHandler> routes;
  // CheckTelemetryPath (at start) keeps it off every other route.
  routes[options_.telemetry_path] = http::MetricsHandler(std::move(collectables));
  routes["/"] = [this](const http::HttpRequest& request) { return HandleLanding(request); };
  routes["/-/healthy"] = [](const http::HttpRequest&) { return http::HttpResponse::Text(200, "Healthy"); };
  routes["/-/ready"] = [this](const http::HttpRequest&) {
    return shutting_down_ ? http::HttpResponse::Text(503, "Shutting down") : http::HttpResponse::Text(200, "Ready");
  };
  routes["/-/reload"] = [this](const http::HttpRequest& request) { return HandleReload(request); };
  const auto run_api = [this](const http::HttpRequest& request) { return run_api_->Handle(request); };
  routes[std::string(runs::kRunsPath)] = run_api;
  routes[std::string(runs::kRunsPath) + "/*"] = run_api;
  return routes;
}

Result<void> Daemon::StartHttp() {
  http::HttpServerOptions http;
  http.listen_address = options_.listen_address;
  http.guard = options_.web_security;
  http.on_connection_evicted = [counter = connections_evicted_] { counter->Increment(); };
  http.on_idle = [trimmer = std::make_shared<IdleTrimmer>()] { (*trimmer)(); };
  if (auto checked = CheckTelemetryPath(options_.telemetry_path); !checked) return checked;
  auto server = http::HttpServer::Start(http, Routes());
  if (!server) return server.failure();
  server_ = std::move(server).value();
  std::string ports;
  for (int port : server_->Ports()) ports += (ports.empty() ? "" : ",") + std::to_string(port);
  spdlog::info("listening on {} (port {}), metrics at {}", options_.listen_address, ports, options_.telemetry_path);
  return {};
}

int Daemon::Run() {
  watchdog_period_ = notifier_->WatchdogPeriod();
  // Ping at a third of the period so that one late wake-up is not fatal.
  const std::chrono::nanoseconds heartbeat_period =
      watchdog_period_ ? std::min<std::chrono::nanoseconds>(*watchdog_period_ / 3, std::chrono::seconds(1))
                       : std::chrono::seconds(1);
  notifier_->Notify("READY=1\nSTATUS=serving");
  spdlog::info("hostperf_exporter {} ready", build_info::kVersion);
  const bool clean = scheduler_->Run([this] { Heartbeat(); }, heartbeat_period);
  notifier_->Notify("STOPPING=1");
  spdlog::info("shutting down");
  return clean ? 0 : 3;
}

void Daemon::Heartbeat() {
  // The scheduler calls this at least every second, also while paused.
  calendar_->Tick();
  if (!watchdog_period_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_watchdog_ < *watchdog_period_ / 3) return;
  last_watchdog_ = now;
  notifier_->Notify("WATCHDOG=1");
}

void Daemon::Shutdown() {
  shutting_down_ = true;
  scheduler_->RequestStop();
}

Result<void> Daemon::Reload() {
  std::lock_guard reload_lock(reload_mu_);
  notifier_->Notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(MonotonicMicros()));
  auto loaded = LoadDaemonConfig(options_.config_file);
  if (!loaded) return ReloadFailed("the running config", loaded.error());
  auto next = std::make_shared<const config::Config>(std::move(loaded).value());
  // The token file is part of the config: unreadable keeps the old config and token.
  auto token = LoadApiToken(*next);
  if (!token) return ReloadFailed("the running config and API token", token.error());
  if (config::ResolveStateDirectory(*next) != state_directory_) {
    spdlog::warn("state_directory changed; the new one takes effect at the next restart");
  }
  {
    std::lock_guard lock(config_mu_);
    config_ = next;
  }
  scheduler_->ApplyConfig(next);
  calendar_->Apply(*next);  // re-plans the next full run
  // e.g. the responder's ports or secret
  for (const auto& probe : probes_) probe->StartServices(next->Section(probe->Name()));
  run_api_->SetToken(std::move(token).value());
  reload_successful_->Set(1);
  reload_timestamp_->Set(clock_.UnixSeconds());
  spdlog::info("config reloaded from {}", next->source);
  notifier_->Notify("READY=1\nSTATUS=serving");
  return {};
}

Failure Daemon::ReloadFailed(std::string_view kept, std::string message) {
  reload_successful_->Set(0);
  spdlog::error("config reload failed, keeping {}: {}", kept, message);
  notifier_->Notify("READY=1\nSTATUS=serving (last reload failed)");
  return Failure{"bad_config", std::move(message)};
}

http::HttpResponse Daemon::HandleLanding(const http::HttpRequest& request) const {
  if (request.method != "GET" && request.method != "HEAD") return MethodNotAllowed("GET, HEAD");
  std::string source;
  {
    std::lock_guard lock(config_mu_);
    source = config_->source;
  }
  http::HttpResponse response;
  response.content_type = "text/html; charset=utf-8";
  response.body = RenderLandingPage(scheduler_->Snapshot(), options_.telemetry_path, source, clock_.UnixSeconds(),
                                    run_manager_->Recent(5), calendar_->NextUnixSeconds());
  return response;
}

http::HttpResponse Daemon::HandleReload(const http::HttpRequest& request) {
  if (!options_.enable_lifecycle) {
    return http::HttpResponse::Text(403,
                                    "Lifecycle API is not enabled (start with --web.enable-lifecycle; SIGHUP reloads)");
  }
  if (request.method != "POST") return MethodNotAllowed("POST");
  // A browser sends a cross-site "simple request" (a form, a no-cors
  // fetch) without asking first: such requests carry Origin or
  // Sec-Fetch-Site, or a form's Content-Type. curl, Ansible, scripts send
  // none of these.
  const std::string site = request.Header("sec-fetch-site");
  std::string type = request.Header("content-type");
  type = type.substr(0, type.find(';'));
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  while (!type.empty() && type.back() == ' ') type.pop_back();
  if (!request.Header("origin").empty() || (!site.empty() && site != "none") ||
      type == "application/x-www-form-urlencoded" || type == "multipart/form-data" || type == "text/plain") {
    return http::HttpResponse::Text(403,
                                    "cross-site requests to /-/reload are refused (no Origin, Sec-Fetch-Site or "
                                    "form Content-Type)");
  }
  const auto reloaded = Reload();
  // The config's error text stays in the log: it may name files and values.
  if (!reloaded) return http::HttpResponse::Text(500, "config reload failed; the previous config stays (see the log)");
  return http::HttpResponse::Text(200, "config reloaded");
}

}  // namespace hostperf::daemon
