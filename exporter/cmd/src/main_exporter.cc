// hostperf_exporter: the daemon.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hostperf/base/flags.h"
#include "hostperf/cmd/logging.h"
#include "hostperf/config/config.h"
#include "hostperf/daemon/daemon.h"
#include "hostperf/http/web_security.h"
#include "hostperf/probes/build_info.h"
#include "hostperf/probes/probe.h"

namespace {

namespace config = hostperf::config;
namespace probes = hostperf::probes;
using hostperf::FlagSpec;
using hostperf::FlagStyle;
using hostperf::ParsedFlags;
using hostperf::Result;
using hostperf::Switch;
using hostperf::Valued;

constexpr const char* kUsage = R"(usage: hostperf_exporter [flags]

Runs low-impact host performance probes on a schedule and serves the results
to Prometheus.

Flags:
  --config.file=PATH          TOML config file (default: the embedded defaults)
  --config.check              validate the config and make every start-up check of the
                              daemon (token and secret files, peers), print the result (and
                              warnings, such as this host missing from probes.net's peers)
                              and exit 0 or 1
  --web.listen-address=ADDR   address to listen on (default ":9580"; port 0 picks one)
  --web.telemetry-path=PATH   path of the metrics endpoint (default "/metrics")
  --web.config.file=PATH      TLS and basic auth (exporter-toolkit YAML format); re-read
                              when it or its TLS files change, and on SIGHUP
  --web.enable-lifecycle      serve POST /-/reload (off by default; SIGHUP always reloads)
  --log.level=LEVEL           debug, info, warn or error (default info)
  --log.format=FORMAT         logfmt or json (default logfmt)
  --help                      show this help and exit
  --version                   show the version and exit
)";

void PrintVersion() {
  namespace bi = hostperf::build_info;
  std::printf("hostperf_exporter, version %s (revision: %s)\n  compiler: %s %s\n  flags: %s\n  fingerprint: %s\n",
              bi::kVersion, bi::kRevision, bi::kCompiler, bi::kCompilerVersion, bi::kBuildFlags, bi::kFingerprint);
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "hostperf_exporter: %s\n", message.c_str());
  return 1;
}

Result<ParsedFlags> ParseExporterFlags(int argc, char** argv) {
  static constexpr FlagSpec kFlags[] = {
      Valued("config.file"),
      Valued("web.listen-address"),
      Valued("web.telemetry-path"),
      Valued("web.config.file"),
      Valued("log.level"),
      Valued("log.format"),
      Switch("config.check"),
      Switch("web.enable-lifecycle"),
      Switch("help"),
      Switch("version"),
  };
  return hostperf::ParseFlags(std::vector<std::string>(argv + 1, argv + argc), {kFlags, false, FlagStyle::kExporter});
}

// --help and --version are answered before anything else is checked.
std::optional<int> AnswerInfoFlags(const ParsedFlags& flags) {
  if (flags.Has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (flags.Has("version")) {
    PrintVersion();
    return 0;
  }
  return std::nullopt;
}

Result<void> SetUpLoggingFromFlags(const ParsedFlags& flags) {
  auto format = hostperf::cmd::ParseLogFormat(flags.Get("log.format").value_or("logfmt"));
  if (!format) return format.failure();
  return hostperf::cmd::SetUpLogging(flags.Get("log.level").value_or("info"), *format);
}

// --web.config.file; null when not given. Serving without the TLS or auth
// the operator asked for would be worse than not starting, so a bad file is
// an error.
Result<std::shared_ptr<hostperf::http_security::WebSecurity>> LoadWebSecurity(const ParsedFlags& flags) {
  const auto path = flags.Get("web.config.file");
  if (!path) return std::shared_ptr<hostperf::http_security::WebSecurity>();
  auto loaded = hostperf::http_security::WebSecurity::Load(*path);
  if (!loaded) return loaded.failure();
  return std::shared_ptr<hostperf::http_security::WebSecurity>(std::move(loaded).value());
}

Result<hostperf::daemon::DaemonOptions> DaemonOptionsFromFlags(
    const ParsedFlags& flags, std::shared_ptr<hostperf::http_security::WebSecurity> web_security) {
  hostperf::daemon::DaemonOptions options;
  if (auto path = flags.Get("config.file")) options.config_file = *path;
  options.listen_address = flags.Get("web.listen-address").value_or(":9580");
  options.telemetry_path = flags.Get("web.telemetry-path").value_or("/metrics");
  options.web_security = std::move(web_security);
  options.enable_lifecycle = flags.Has("web.enable-lifecycle");
  if (auto checked = hostperf::daemon::CheckTelemetryPath(options.telemetry_path); !checked) return checked.failure();
  return options;
}

// Blocks the signals the daemon handles in the calling thread, before any
// other thread starts, so that every thread (HTTP workers, probes) inherits
// the mask and only the signal thread receives them.
sigset_t BlockHandledSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signals;
}

// What the signal thread, the reload thread and main() share. Signals are
// handled from the first moment (before the daemon starts, which reads files
// that may block), and a reload never runs on the signal thread, so SIGTERM
// is acted on at every stage.
class Lifecycle {
 public:
  // How long a stop waits for a start-up or a reload stuck in a read (a hung
  // NFS mount) before the process exits without it.
  static constexpr std::chrono::seconds kStuckGrace{5};

  // The signal thread: SIGHUP queues a reload, SIGTERM/SIGINT stop.
  void HandleSignals(sigset_t signals) {
    for (;;) {
      int signo = 0;
      if (sigwait(&signals, &signo) != 0) continue;
      std::unique_lock lock(mu_);
      if (signo == SIGHUP) {
        if (daemon_ == nullptr) {
          spdlog::info("SIGHUP during start-up: ignored (the config being loaded is the current file)");
          continue;
        }
        reload_pending_ = true;
        cv_.notify_all();
        continue;
      }
      const char* name = signo == SIGTERM ? "SIGTERM" : "SIGINT";
      stop_ = true;
      cv_.notify_all();
      if (daemon_ != nullptr) {
        spdlog::info("{}: stopping", name);
        daemon_->Shutdown();
        return;
      }
      if (started_) return;  // start-up failed: main() returns on its own
      spdlog::info("{} during start-up: stopping", name);
      // Start-up ends on its own (then stops at once) unless it is stuck.
      if (!cv_.wait_for(lock, kStuckGrace, [this] { return started_; })) {
        spdlog::error("{} during start-up: start-up is blocked (reading a file?); exiting without it", name);
        spdlog::default_logger()->flush();
        std::_Exit(128 + signo);
      }
      if (daemon_ != nullptr) daemon_->Shutdown();
      return;
    }
  }

  // The reload thread: runs queued reloads until stopped.
  void RunReloads(hostperf::http_security::WebSecurity* web_security) {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || reload_pending_; });
      if (stop_) return;
      reload_pending_ = false;
      reloading_ = true;
      hostperf::daemon::Daemon* daemon = daemon_;
      lock.unlock();
      spdlog::info("SIGHUP: reloading config");
      (void)daemon->Reload();
      if (web_security) (void)web_security->Reload();
      lock.lock();
      reloading_ = false;
      cv_.notify_all();
    }
  }

  // Start-up ended: `daemon` serves, or null when it failed. False when a
  // stop came during start-up.
  bool Started(hostperf::daemon::Daemon* daemon) {
    std::lock_guard lock(mu_);
    started_ = true;
    daemon_ = daemon;
    cv_.notify_all();
    return !stop_;
  }

  // After Run(): ends the reload thread; false when a reload is stuck in a
  // read, which the caller must not wait for.
  bool StopReloads() {
    std::unique_lock lock(mu_);
    stop_ = true;
    cv_.notify_all();
    return cv_.wait_for(lock, kStuckGrace, [this] { return !reloading_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  hostperf::daemon::Daemon* daemon_ = nullptr;
  bool started_ = false;
  bool stop_ = false;
  bool reload_pending_ = false;
  bool reloading_ = false;
};

// Starts the daemon and serves until a signal stops it; the exit code.
int Serve(hostperf::daemon::DaemonOptions options, config::Config config) {
  // Two malloc arenas, before any thread starts: glibc would give up to
  // 8 per core to the HTTP workers and the probes' threads, each keeping
  // its free pages (measured: 5.5 MiB of a 28 MiB resident set after 6000
  // scrapes). The daemon's allocations are few and small outside the probes.
  (void)::mallopt(M_ARENA_MAX, 2);
  const sigset_t signals = BlockHandledSignals();
  const std::shared_ptr<hostperf::http_security::WebSecurity> web_security = options.web_security;
  // Never freed: the detached signal thread may still wait in sigwait() when
  // main() returns. Held by a static pointer so that LeakSanitizer sees it
  // reachable once that thread has returned (after SIGTERM).
  static Lifecycle* const lifecycle_root = new Lifecycle;
  Lifecycle& lifecycle = *lifecycle_root;
  std::thread([&lifecycle, signals] { lifecycle.HandleSignals(signals); }).detach();
  auto daemon =
      hostperf::daemon::Daemon::Create(std::move(options), std::make_shared<const config::Config>(std::move(config)),
                                       hostperf::daemon::MakeSystemdNotifier());
  if (!daemon) {
    (void)lifecycle.Started(nullptr);
    spdlog::error("{}", daemon.error());
    return 1;
  }
  hostperf::daemon::Daemon& d = *daemon.value();
  if (!lifecycle.Started(&d)) d.Shutdown();  // stopped during start-up: Run() returns at once
  if (web_security) web_security->StartWatching(std::chrono::seconds(2));
  std::thread reload_thread([&lifecycle, &web_security] { lifecycle.RunReloads(web_security.get()); });
  const int code = d.Run();
  const bool reloads_done = lifecycle.StopReloads();
  if (code != 0 || !reloads_done) {
    // A probe ignored cancellation, or a reload is stuck reading a file: do not wait on it.
    spdlog::error("exiting without cleanup of {}", code != 0 ? "an abandoned probe" : "a reload blocked on a file");
    spdlog::default_logger()->flush();
    std::_Exit(0);
  }
  reload_thread.join();
  daemon.value().reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto flags = ParseExporterFlags(argc, argv);
  if (!flags) return Fail(flags.error());
  if (const auto answered = AnswerInfoFlags(*flags)) return *answered;
  if (!flags->positional.empty()) return Fail("unexpected argument \"" + flags->positional.front() + "\" (see --help)");
  if (auto logging = SetUpLoggingFromFlags(*flags); !logging) return Fail(logging.error());
  auto web_security = LoadWebSecurity(*flags);
  if (!web_security) return Fail(web_security.error());
  auto options = DaemonOptionsFromFlags(*flags, std::move(web_security).value());
  if (!options) return Fail(options.error());

  auto loaded = hostperf::daemon::LoadDaemonConfig(options->config_file);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().c_str());
    return 1;
  }
  if (flags->Has("config.check")) {
    // What the daemon's start-up would refuse: the same checks, each said.
    const std::vector<std::string> errors = hostperf::daemon::StartErrors(*loaded, *options);
    for (const std::string& error : errors) std::fprintf(stderr, "%s: %s\n", loaded->source.c_str(), error.c_str());
    if (!errors.empty()) return 1;
    // Valid but probably not what was meant: said, without failing the check.
    for (const std::string& warning : probes::ConfigWarnings(*loaded)) {
      std::fprintf(stderr, "%s: warning: %s\n", loaded->source.c_str(), warning.c_str());
    }
    std::printf("%s: config OK\n", loaded->source.c_str());
    return 0;
  }
  return Serve(std::move(options).value(), std::move(loaded).value());
}
