#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/config/config.h"
#include "hostperf/daemon/framework_metrics.h"
#include "hostperf/daemon/scheduler.h"
#include "hostperf/http/http_server.h"
#include "hostperf/http/web_security.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/calendar.h"
#include "hostperf/runs/run_api.h"
#include "hostperf/runs/run_manager.h"

namespace hostperf::daemon {

// Talks to the service manager (sd_notify); a no-op outside systemd.
class ServiceNotifier {
 public:
  virtual ~ServiceNotifier() = default;
  virtual void Notify(std::string_view state) = 0;
  // Watchdog period requested by the manager, if any.
  virtual std::optional<std::chrono::microseconds> WatchdogPeriod() = 0;
};
std::unique_ptr<ServiceNotifier> MakeSystemdNotifier();

struct DaemonOptions {
  std::optional<std::filesystem::path> config_file;  // none: embedded defaults
  std::string listen_address = ":9580";
  std::string telemetry_path = "/metrics";
  // --web.enable-lifecycle: POST /-/reload (off: 403, as Prometheus does).
  bool enable_lifecycle = false;
  probes::SystemRoots roots;
  std::shared_ptr<http_security::WebSecurity> web_security;  // --web.config.file; null: plain HTTP, no auth
  // Hashed into the full-run calendar's splay; empty: full_runs.host, else the hostname.
  std::string host_identity;
};

// The daemon's own paths, which --web.telemetry-path must not take: "/",
// "/-/..." and "/api/v1/runs" with everything under it.
bool IsReservedPath(const std::string& path);
// --web.telemetry-path: starts with '/', is no reserved path, carries no
// query, fragment, whitespace or control character. The error is one line.
Result<void> CheckTelemetryPath(const std::string& path);

// The config file's config, or the embedded defaults when there is none:
// what the daemon starts with and what a reload reads. [full_runs]' probe
// options are parsed here by each probe's module (errors are bad_config).
Result<config::Config> LoadDaemonConfig(const std::optional<std::filesystem::path>& config_file);

// Every check of the daemon's start-up, made before anything starts: the
// API token file, each probe's config_errors (secret files, peers on the
// exporter's HTTP port). `--config.check` runs the same. One line each;
// empty: the daemon would start.
std::vector<std::string> StartErrors(const config::Config& config, const DaemonOptions& options);

// Wires config, probes, scheduler and HTTP together.
class Daemon {
 public:
  // `config` is the already validated initial config.
  static Result<std::unique_ptr<Daemon>> Create(DaemonOptions options, std::shared_ptr<const config::Config> config,
                                                std::unique_ptr<ServiceNotifier> notifier);
  ~Daemon();

  // Runs the scheduler on the calling thread until Shutdown(). Returns the
  // process exit code.
  int Run();
  // Safe from any thread (the signal thread, an HTTP worker).
  void Shutdown();
  // Re-reads, validates and swaps the config; on error (reason bad_config)
  // the old one stays.
  Result<void> Reload();

  std::vector<int> Ports() const { return server_->Ports(); }

  // api.token_file of `config`: nullopt when unset (API disabled).
  static Result<std::optional<std::string>> LoadApiToken(const config::Config& config);

 private:
  Daemon(DaemonOptions options, std::shared_ptr<const config::Config> config,
         std::unique_ptr<ServiceNotifier> notifier);
  // The start-up steps, in order; each one uses what the ones before built.
  Result<void> Start();
  Result<void> CreateStateDirectory();
  void RegisterMetrics();                            // registry, framework metrics, build info, reload gauges
  void StartProbes();                                // every registered probe, with its services
  void StartScheduler();                             // the impact gate and the scheduler
  void StartRuns(std::optional<std::string> token);  // the run manager and the run API
  std::map<std::string, http::HttpHandler> Routes();
  Result<void> StartHttp();
  // Records a failed reload (gauge, log, service status); `kept` names what stays.
  Failure ReloadFailed(std::string_view kept, std::string message);
  http::HttpResponse HandleLanding(const http::HttpRequest& request) const;
  http::HttpResponse HandleReload(const http::HttpRequest& request);
  void Heartbeat();

  DaemonOptions options_;
  std::unique_ptr<ServiceNotifier> notifier_;
  RealClock clock_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<FrameworkMetrics> framework_metrics_;
  prometheus::Gauge* reload_successful_ = nullptr;
  prometheus::Gauge* reload_timestamp_ = nullptr;
  prometheus::Counter* connections_evicted_ = nullptr;
  std::filesystem::path state_directory_;
  std::vector<std::unique_ptr<probes::Probe>> probes_;
  std::unique_ptr<ImpactGate> impact_gate_;  // used by scheduler_: declared before it
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<runs::RunManager> run_manager_;    // full runs (run API)
  std::unique_ptr<runs::FullRunCalendar> calendar_;  // [full_runs]; submits to run_manager_
  std::unique_ptr<runs::RunApi> run_api_;
  std::unique_ptr<http::HttpServer> server_;

  std::mutex reload_mu_;  // one reload at a time (SIGHUP and HTTP)
  mutable std::mutex config_mu_;
  std::shared_ptr<const config::Config> config_;
  std::atomic<bool> shutting_down_{false};
  std::optional<std::chrono::microseconds> watchdog_period_;
  std::chrono::steady_clock::time_point last_watchdog_;
};

}  // namespace hostperf::daemon
