#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/http/http_server.h"
#include "hostperf/http/web_config.h"

struct ssl_st;

namespace hostperf::http_security {

// Makes Debian's CivetWeb able to start TLS (see tls_shim/openssl_shim.cc):
// loads the shims from <executable dir>/HOSTPERF_TLS_SHIM_RELDIR once. Call
// before starting a TLS listener.
Result<void> LoadCivetwebTlsShims();

// Remembers (user, password, hash) triples that passed bcrypt, as SHA-256
// digests, so that a scrape every few seconds does not pay bcrypt's
// deliberate slowness each time. Bounded: emptied when full.
class CredentialCache {
 public:
  explicit CredentialCache(std::size_t capacity = 256) : capacity_(capacity) {}
  bool Contains(const std::string& user, const std::string& password, const std::string& hash) const;
  void Insert(const std::string& user, const std::string& password, const std::string& hash);
  std::size_t size() const;

 private:
  static std::string Key(const std::string& user, const std::string& password, const std::string& hash);
  std::size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_set<std::string> verified_;
};

// Bounds the bcrypt work that unauthenticated clients can cause: checks of
// credentials not in the cache take a token from the client's source bucket
// and from a global one, and run one at a time. Wrong passwords from any
// number of concurrent clients cost at most `global_per_second` bcrypt
// computations a second (about 7 % of a core each at cost 10), and one source
// no more than `source_per_second`, so a genuine client elsewhere keeps its
// share. Thread-safe.
class BcryptLimiter {
 public:
  struct Limits {
    double source_burst = 6;
    double source_per_second = 1;
    double global_burst = 8;
    double global_per_second = 4;
    std::size_t max_sources = 4096;
    // A refused request's answer waits this long, holding its connection, so
    // that a client cannot retry at the rate its CPU allows: one source has at
    // most HttpServerOptions::max_connections_per_source connections, hence
    // at most that many refusals a second.
    std::chrono::milliseconds refusal_delay{1000};
  };
  BcryptLimiter() : BcryptLimiter(Limits{}) {}
  explicit BcryptLimiter(Limits limits) : limits_(limits) {}
  // True (a token taken) if `source` may have a bcrypt check now.
  bool Admit(const std::string& source, std::chrono::steady_clock::time_point now);
  // Serialises the checks themselves.
  std::mutex& check_mutex() { return check_mu_; }
  std::chrono::milliseconds refusal_delay() const { return limits_.refusal_delay; }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point updated;
  };
  static void Refill(Bucket& bucket, double burst, double rate, std::chrono::steady_clock::time_point now);
  Limits limits_;
  std::mutex mu_;
  Bucket global_{-1, {}};
  std::map<std::string, Bucket> sources_;
  std::mutex check_mu_;
};

// The live --web.config.file: TLS contexts for CivetWeb, the basic-auth gate
// in front of every endpoint, the extra response headers, and hot reload
// (polled, or on SIGHUP). A reload that fails keeps the running config.
// Exports hostperf_http_auth_failures_total and
// hostperf_web_config_last_reload_successful. The HttpServer sees it as its
// RequestGuard.
class WebSecurity final : public prometheus::Collectable, public http::RequestGuard {
 public:
  // Reads and checks the file, TLS files included.
  static Result<std::unique_ptr<WebSecurity>> Load(const std::filesystem::path& file);
  ~WebSecurity() override;
  WebSecurity(const WebSecurity&) = delete;
  WebSecurity& operator=(const WebSecurity&) = delete;

  // Fixed at start: switching TLS on or off needs a restart (the listening
  // socket changes), so a reload that would do so is refused.
  bool tls_enabled() const override { return tls_enabled_; }
  // LoadCivetwebTlsShims().
  Result<void> PrepareTls() override;

  // nullopt: the request may go on; else the 401 to send.
  std::optional<http::HttpResponse> Authorize(const http::HttpRequest& request) override;
  std::vector<std::pair<std::string, std::string>> ResponseHeaders() const override;

  // Re-reads the file (and the TLS files it names) and swaps the config.
  Result<void> Reload();
  // Reload() when the file or a TLS file it names changes (inode, size,
  // modification time), checked every `period` on a thread of its own.
  void StartWatching(std::chrono::milliseconds period);

  // The SSL_CTX that CivetWeb accepts with. Each handshake switches to the
  // context of the current config, so certificate rotation and client-auth
  // changes apply to new connections without a restart.
  void* AcceptContext() const override { return accept_context_.get(); }
  void SetHandshakeObserver(std::function<void()> observer) override;

  std::uint64_t auth_failures() const { return auth_failures_.load(); }
  std::vector<prometheus::MetricFamily> Collect() const override;
  const CredentialCache& cache() const { return cache_; }

 private:
  struct State {
    WebConfig config;
    TlsContextPtr tls;
    std::string fingerprint;  // stat() of the file and its TLS files
  };
  explicit WebSecurity(std::filesystem::path file);
  static Result<std::shared_ptr<const State>> LoadState(const std::filesystem::path& file);
  static std::string Fingerprint(const std::filesystem::path& file, const WebConfig* config);
  static int OnClientHello(ssl_st* ssl, int* alert, void* self);
  std::shared_ptr<const State> Current() const;
  void Watch(std::chrono::milliseconds period);

  std::filesystem::path file_;
  bool tls_enabled_ = false;
  TlsContextPtr accept_context_;
  mutable std::mutex mu_;
  std::shared_ptr<const State> state_;
  CredentialCache cache_;
  std::atomic<std::uint64_t> auth_failures_{0};
  std::atomic<std::uint64_t> auth_rate_limited_{0};
  BcryptLimiter limiter_;
  std::function<void()> handshake_observer_;  // set before serving, cleared after
  std::atomic<bool> last_reload_ok_{true};
  std::mutex reload_mu_;

  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stop_ = false;
  std::thread watcher_;
};

}  // namespace hostperf::http_security
