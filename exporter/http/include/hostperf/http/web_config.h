#pragma once

// --web.config.file: TLS and basic auth in the Prometheus exporter-toolkit
// format, so that one file serves node_exporter and hostperf_exporter alike.
//
//   tls_server_config:
//     cert_file: server.crt            # relative paths: against this file's directory
//     key_file: server.key
//     client_ca_file: ca.crt
//     client_auth_type: RequireAndVerifyClientCert
//     min_version: TLS12               # TLS10 | TLS11 | TLS12 (default) | TLS13
//     max_version: TLS13
//     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]  # TLS 1.2 and older; Go's names
//     curve_preferences: [X25519, CurveP256]  # X25519, CurveP256, CurveP384, CurveP521
//     prefer_server_cipher_suites: true       # default true
//   http_server_config:
//     headers: {Strict-Transport-Security: max-age=31536000}
//   basic_auth_users:
//     prometheus: $2y$10$...           # bcrypt
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hostperf/base/result.h"

struct ssl_ctx_st;

namespace hostperf::http_security {

// Go's crypto/tls names, as exporter-toolkit spells them.
enum class ClientAuthType {
  kNoClientCert,
  kRequestClientCert,
  kRequireAnyClientCert,
  kVerifyClientCertIfGiven,
  kRequireAndVerifyClientCert,
};

struct TlsServerConfig {
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  std::filesystem::path client_ca_file;  // empty: none
  ClientAuthType client_auth_type = ClientAuthType::kNoClientCert;
  int min_version = 0x0303;  // OpenSSL's TLS1_2_VERSION, exporter-toolkit's default
  int max_version = 0;       // 0: the newest the library supports
  // OpenSSL's cipher string for TLS 1.2 and older. Default: Go's choice,
  // forward-secret AEAD suites only (ECDHE with AES-GCM or ChaCha20-Poly1305);
  // no static-RSA key exchange, no CBC. TLS 1.3 suites are not configurable
  // (as in Go).
  std::string cipher_list = kDefaultCipherList;
  // OpenSSL's groups list (SSL_CTX_set1_groups_list).
  std::string groups = "X25519:P-256:P-384:P-521";
  bool prefer_server_cipher_suites = true;

  static constexpr const char* kDefaultCipherList =
      "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
      "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
};

// exporter-toolkit's cipher_suites names (Go's crypto/tls) -> OpenSSL's
// names; TLS 1.3 names map to "" (accepted, not configurable).
const std::map<std::string, std::string>& GoCipherSuites();

struct WebConfig {
  std::string source;  // the file it came from
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users;  // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;
};

// Parses and checks the YAML text without touching other files. Errors read
// "<file>: <what is wrong>" (with line:column for YAML syntax errors); relative
// paths are resolved against `file`'s directory.
Result<WebConfig> ParseWebConfig(const std::string& text, const std::filesystem::path& file);

// Reads the file and parses it; the TLS files are checked by BuildTlsContext.
Result<WebConfig> ReadWebConfig(const std::filesystem::path& file);

// A configured OpenSSL server context: certificate chain and key (checked to
// match), client CA, client auth policy, protocol versions, no session
// resumption (a reload must not let an old session skip new checks).
using TlsContextPtr = std::shared_ptr<ssl_ctx_st>;
Result<TlsContextPtr> BuildTlsContext(const TlsServerConfig& tls, const std::string& source);

// "$2a$", "$2b$" or "$2y$", a cost of 04-31, 22 characters of salt and 31 of hash.
bool IsBcryptHash(std::string_view hash);

// libcrypt's bcrypt; compares in constant time.
bool VerifyBcrypt(const std::string& password, const std::string& hash);

}  // namespace hostperf::http_security
