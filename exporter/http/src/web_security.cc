#include "hostperf/http/web_security.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace hostperf::http_security {
namespace {

// Verified against for unknown users so that a wrong user name costs the same
// bcrypt work as a wrong password (no user enumeration by timing). The hash
// of a random, discarded password, at the usual cost 10.
constexpr const char* kDummyHash = "$2b$10$OCPrhvwXxnTrND2aqktiyenkGyATIAAH.e/jzPKfBWiKiOoITGdhu";

struct Credentials {
  std::string user;
  std::string password;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// "Basic base64(user:password)" (RFC 7617).
std::optional<Credentials> ParseBasic(const std::string& header) {
  constexpr std::string_view kScheme = "basic ";
  if (header.size() <= kScheme.size() || !EqualsIgnoreCase(std::string_view(header).substr(0, 6), kScheme)) {
    return std::nullopt;
  }
  std::string encoded = header.substr(kScheme.size());
  while (!encoded.empty() && (encoded.back() == ' ' || encoded.back() == '\t')) encoded.pop_back();
  if (encoded.empty() || encoded.size() % 4 != 0 || encoded.size() > 4096) return std::nullopt;
  std::string decoded(encoded.size() / 4 * 3, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                      reinterpret_cast<const unsigned char*>(encoded.data()), static_cast<int>(encoded.size()));
  if (n < 0) return std::nullopt;
  std::size_t length = static_cast<std::size_t>(n);
  // EVP_DecodeBlock counts the bytes that padding stands for.
  for (auto it = encoded.rbegin(); it != encoded.rend() && *it == '=' && length > 0; ++it) --length;
  decoded.resize(length);
  const auto colon = decoded.find(':');
  // A NUL would end the password early for crypt(): refuse it.
  if (colon == std::string::npos || decoded.find('\0') != std::string::npos) return std::nullopt;
  return Credentials{decoded.substr(0, colon), decoded.substr(colon + 1)};
}

std::string StatText(const std::filesystem::path& path) {
  struct stat st {};
  if (path.empty()) return "-";
  if (::stat(path.c_str(), &st) != 0) return path.string() + ":missing";
  return path.string() + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
         std::to_string(st.st_ctim.tv_nsec);
}

}  // namespace

Result<void> LoadCivetwebTlsShims() {
  static std::once_flag once;
  static Result<void> loaded;
  std::call_once(once, [] {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) {
      loaded = Failure{"tls_unavailable", "cannot locate the executable: " + ec.message()};
      return;
    }
    const auto dir = exe.parent_path() / HOSTPERF_TLS_SHIM_RELDIR;
    // libcrypto first: the ssl shim depends on it.
    for (const char* name : {"libhostperf-civetweb-crypto.so", "libhostperf-civetweb-ssl.so"}) {
      const auto path = (dir / name).lexically_normal();
      if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {  // kept loaded for good
        const char* why = dlerror();
        loaded = Failure{"tls_unavailable", "TLS needs " + path.string() +
                                                " (installed with hostperf_exporter): " + (why ? why : "not loadable")};
        return;
      }
    }
  });
  return loaded;
}

std::string CredentialCache::Key(const std::string& user, const std::string& password, const std::string& hash) {
  std::string input = user;
  input.push_back('\0');
  input += password;
  input.push_back('\0');
  input += hash;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(input.data(), input.size(), digest, &length, EVP_sha256(), nullptr);
  OPENSSL_cleanse(input.data(), input.size());
  return std::string(reinterpret_cast<const char*>(digest), length);
}

bool CredentialCache::Contains(const std::string& user, const std::string& password, const std::string& hash) const {
  const std::string key = Key(user, password, hash);
  std::lock_guard lock(mu_);
  return verified_.count(key) > 0;
}

void CredentialCache::Insert(const std::string& user, const std::string& password, const std::string& hash) {
  std::string key = Key(user, password, hash);
  std::lock_guard lock(mu_);
  if (verified_.size() >= capacity_) verified_.clear();
  verified_.insert(std::move(key));
}

std::size_t CredentialCache::size() const {
  std::lock_guard lock(mu_);
  return verified_.size();
}

void BcryptLimiter::Refill(Bucket& bucket, double burst, double rate, std::chrono::steady_clock::time_point now) {
  if (bucket.tokens < 0) {
    bucket = {burst, now};
    return;
  }
  const double seconds = std::chrono::duration<double>(now - bucket.updated).count();
  bucket.tokens = std::min(burst, bucket.tokens + std::max(0.0, seconds) * rate);
  bucket.updated = now;
}

bool BcryptLimiter::Admit(const std::string& source, std::chrono::steady_clock::time_point now) {
  std::lock_guard lock(mu_);
  Refill(global_, limits_.global_burst, limits_.global_per_second, now);
  auto it = sources_.find(source);
  if (it == sources_.end()) {
    if (sources_.size() >= limits_.max_sources) {
      // Forget the sources whose buckets have refilled: they lose nothing.
      for (auto s = sources_.begin(); s != sources_.end();) {
        Refill(s->second, limits_.source_burst, limits_.source_per_second, now);
        s = s->second.tokens >= limits_.source_burst ? sources_.erase(s) : std::next(s);
      }
      if (sources_.size() >= limits_.max_sources) return false;
    }
    it = sources_.emplace(source, Bucket{-1, {}}).first;
  }
  Bucket& bucket = it->second;
  Refill(bucket, limits_.source_burst, limits_.source_per_second, now);
  if (bucket.tokens < 1 || global_.tokens < 1) return false;
  bucket.tokens -= 1;
  global_.tokens -= 1;
  return true;
}

WebSecurity::WebSecurity(std::filesystem::path file) : file_(std::move(file)) {}

WebSecurity::~WebSecurity() {
  {
    std::lock_guard lock(watch_mu_);
    stop_ = true;
  }
  watch_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::string WebSecurity::Fingerprint(const std::filesystem::path& file, const WebConfig* config) {
  std::string text = StatText(file);
  if (config != nullptr && config->tls) {
    for (const auto* path : {&config->tls->cert_file, &config->tls->key_file, &config->tls->client_ca_file}) {
      text += "|" + StatText(*path);
    }
  }
  return text;
}

Result<std::shared_ptr<const WebSecurity::State>> WebSecurity::LoadState(const std::filesystem::path& file) {
  using R = Result<std::shared_ptr<const State>>;
  // Stat first: a change while reading is seen by the next poll.
  const std::string file_stat = StatText(file);
  auto config = ReadWebConfig(file);
  if (!config) return config.failure();
  auto state = std::make_shared<State>();
  state->config = std::move(config).value();
  state->fingerprint = Fingerprint(file, &state->config);
  if (state->config.tls) {
    auto context = BuildTlsContext(*state->config.tls, state->config.source);
    if (!context) return context.failure();
    state->tls = std::move(context).value();
  }
  if (file_stat != StatText(file)) return R::Error(file.string() + ": changed while being read; try again");
  return std::shared_ptr<const State>(std::move(state));
}

Result<std::unique_ptr<WebSecurity>> WebSecurity::Load(const std::filesystem::path& file) {
  using R = Result<std::unique_ptr<WebSecurity>>;
  auto state = LoadState(file);
  if (!state) return state.failure();
  std::unique_ptr<WebSecurity> security(new WebSecurity(file));
  security->state_ = std::move(state).value();
  security->tls_enabled_ = security->state_->tls != nullptr;
  if (security->tls_enabled_) {
    security->accept_context_ = security->state_->tls;
    SSL_CTX_set_client_hello_cb(static_cast<SSL_CTX*>(security->accept_context_.get()), &WebSecurity::OnClientHello,
                                security.get());
  }
  spdlog::info("web config {}: TLS {}, basic auth {}", file.string(), security->tls_enabled_ ? "on" : "off",
               security->state_->config.basic_auth_users.empty() ? "off" : "on");
  return R(std::move(security));
}

std::shared_ptr<const WebSecurity::State> WebSecurity::Current() const {
  std::lock_guard lock(mu_);
  return state_;
}

int WebSecurity::OnClientHello(ssl_st* ssl, int* /*alert*/, void* self) {
  const auto state = static_cast<WebSecurity*>(self)->Current();
  SSL_CTX* current = state->tls.get();
  if (current == nullptr || current == SSL_get_SSL_CTX(ssl)) return SSL_CLIENT_HELLO_SUCCESS;
  // A reloaded config: certificate, key and verify store follow the context;
  // the settings SSL_new() copied are set again.
  if (SSL_set_SSL_CTX(ssl, current) == nullptr) return SSL_CLIENT_HELLO_ERROR;
  SSL_set_verify(ssl, SSL_CTX_get_verify_mode(current), SSL_CTX_get_verify_callback(current));
  if (SSL_set_min_proto_version(ssl, SSL_CTX_get_min_proto_version(current)) != 1 ||
      SSL_set_max_proto_version(ssl, SSL_CTX_get_max_proto_version(current)) != 1) {
    return SSL_CLIENT_HELLO_ERROR;
  }
  // Suites, groups and the server-preference option are chosen after this
  // callback, from the SSL's own copies.
  const TlsServerConfig& tls = *state->config.tls;
  if (SSL_set_cipher_list(ssl, tls.cipher_list.c_str()) != 1 || SSL_set1_groups_list(ssl, tls.groups.c_str()) != 1) {
    return SSL_CLIENT_HELLO_ERROR;
  }
  if (tls.prefer_server_cipher_suites) {
    SSL_set_options(ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_clear_options(ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  return SSL_CLIENT_HELLO_SUCCESS;
}

void WebSecurity::SetHandshakeObserver(std::function<void()> observer) {
  handshake_observer_ = std::move(observer);
  auto* ctx = static_cast<SSL_CTX*>(accept_context_.get());
  if (ctx == nullptr) return;
  SSL_CTX_set_app_data(ctx, this);
  SSL_CTX_set_info_callback(ctx, [](const SSL* ssl, int where, int /*ret*/) {
    if ((where & SSL_CB_HANDSHAKE_START) == 0) return;
    auto* self = static_cast<WebSecurity*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    if (self != nullptr && self->handshake_observer_) self->handshake_observer_();
  });
}

std::optional<http::HttpResponse> WebSecurity::Authorize(const http::HttpRequest& request) {
  const auto state = Current();
  const auto& users = state->config.basic_auth_users;
  if (users.empty()) return std::nullopt;
  if (const auto credentials = ParseBasic(request.Header("authorization"))) {
    const auto user = users.find(credentials->user);
    const bool known = user != users.end();
    if (known && cache_.Contains(credentials->user, credentials->password, user->second)) return std::nullopt;
    // Not verified before: bcrypt, within the limiter's budget.
    if (!limiter_.Admit(http::ClientSourceKey(request.remote_address), std::chrono::steady_clock::now())) {
      ++auth_failures_;
      ++auth_rate_limited_;
      std::this_thread::sleep_for(limiter_.refusal_delay());
      auto response = http::HttpResponse::Text(429, "Too many authentication attempts; retry later");
      response.headers.emplace_back("Retry-After", "1");
      return response;
    }
    std::lock_guard one_at_a_time(limiter_.check_mutex());
    if (known) {
      if (VerifyBcrypt(credentials->password, user->second)) {
        cache_.Insert(credentials->user, credentials->password, user->second);
        return std::nullopt;
      }
    } else {
      (void)VerifyBcrypt(credentials->password, kDummyHash);
    }
  }
  ++auth_failures_;
  auto response = http::HttpResponse::Text(401, "Unauthorized");
  response.headers.emplace_back("WWW-Authenticate", "Basic realm=\"hostperf\", charset=\"UTF-8\"");
  return response;
}

std::vector<std::pair<std::string, std::string>> WebSecurity::ResponseHeaders() const {
  return Current()->config.headers;
}

Result<void> WebSecurity::PrepareTls() { return LoadCivetwebTlsShims(); }

Result<void> WebSecurity::Reload() {
  std::lock_guard reload_lock(reload_mu_);
  auto next = LoadState(file_);
  if (next && (*next)->config.tls.has_value() != tls_enabled_) {
    next = Failure{"needs_restart", file_.string() + ": tls_server_config was " + (tls_enabled_ ? "removed" : "added") +
                                        "; switching TLS on or off needs a restart of hostperf_exporter"};
  }
  last_reload_ok_ = next.ok();
  if (!next) {
    spdlog::error("web config reload failed, keeping the running one: {}", next.error());
    return next.failure();
  }
  {
    std::lock_guard lock(mu_);
    state_ = std::move(next).value();
  }
  spdlog::info("web config reloaded from {}", file_.string());
  return {};
}

std::vector<prometheus::MetricFamily> WebSecurity::Collect() const {
  prometheus::MetricFamily failures{"hostperf_http_auth_failures_total",
                                    "HTTP requests refused for missing or wrong basic auth credentials.",
                                    prometheus::MetricType::Counter,
                                    {}};
  failures.metric.emplace_back().counter.value = static_cast<double>(auth_failures_.load());
  prometheus::MetricFamily reload{"hostperf_web_config_last_reload_successful",
                                  "1 if the last load of --web.config.file succeeded, else 0 (the previous one stays).",
                                  prometheus::MetricType::Gauge,
                                  {}};
  reload.metric.emplace_back().gauge.value = last_reload_ok_ ? 1 : 0;
  prometheus::MetricFamily limited{
      "hostperf_http_auth_rate_limited_total",
      "HTTP requests answered 429 because their credentials would have needed a bcrypt check beyond the "
      "per-source or global budget (also counted in hostperf_http_auth_failures_total).",
      prometheus::MetricType::Counter,
      {}};
  limited.metric.emplace_back().counter.value = static_cast<double>(auth_rate_limited_.load());
  return {std::move(failures), std::move(reload), std::move(limited)};
}

void WebSecurity::StartWatching(std::chrono::milliseconds period) {
  if (watcher_.joinable()) return;
  watcher_ = std::thread([this, period] { Watch(period); });
}

void WebSecurity::Watch(std::chrono::milliseconds period) {
  std::string last_seen = Current()->fingerprint;
  std::unique_lock lock(watch_mu_);
  while (!watch_cv_.wait_for(lock, period, [this] { return stop_; })) {
    const auto state = Current();
    const std::string now = Fingerprint(file_, &state->config);
    // A failed reload is retried only after the next change: one error per edit.
    if (now == last_seen) continue;
    last_seen = now;
    if (now == state->fingerprint) continue;  // e.g. reloaded by SIGHUP meanwhile
    lock.unlock();
    (void)Reload();
    lock.lock();
  }
}

}  // namespace hostperf::http_security
