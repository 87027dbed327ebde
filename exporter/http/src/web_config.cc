#include "hostperf/http/web_config.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "hostperf/base/files.h"

namespace hostperf::http_security {
namespace {

using Config = Result<WebConfig>;

// Errors name the file and, where YAML knows it, the line and column.
class Errors {
 public:
  explicit Errors(std::string file) : file_(std::move(file)) {}
  std::string At(const YAML::Node& node, const std::string& message) const {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) return file_ + ": " + message;
    return file_ + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " + message;
  }
  std::string Plain(const std::string& message) const { return file_ + ": " + message; }

 private:
  std::string file_;
};

const std::map<std::string, ClientAuthType>& ClientAuthTypes() {
  static const std::map<std::string, ClientAuthType> types = {
      {"NoClientCert", ClientAuthType::kNoClientCert},
      {"RequestClientCert", ClientAuthType::kRequestClientCert},
      {"RequireAnyClientCert", ClientAuthType::kRequireAnyClientCert},
      {"VerifyClientCertIfGiven", ClientAuthType::kVerifyClientCertIfGiven},
      {"RequireAndVerifyClientCert", ClientAuthType::kRequireAndVerifyClientCert},
  };
  return types;
}

const std::map<std::string, int>& TlsVersions() {
  static const std::map<std::string, int> versions = {
      {"TLS10", TLS1_VERSION}, {"TLS11", TLS1_1_VERSION}, {"TLS12", TLS1_2_VERSION}, {"TLS13", TLS1_3_VERSION}};
  return versions;
}

template <typename T>
std::string Choices(const std::map<std::string, T>& map) {
  std::string text;
  for (const auto& [name, value] : map) text += (text.empty() ? "" : ", ") + name;
  return text;
}

bool NeedsClientCa(ClientAuthType type) {
  return type == ClientAuthType::kVerifyClientCertIfGiven || type == ClientAuthType::kRequireAndVerifyClientCert;
}

// Keys exporter-toolkit knows that hostperf does not implement: refusing
// them beats silently serving with weaker settings than the file asks for.
const std::set<std::string>& UnsupportedTlsKeys() {
  static const std::set<std::string> keys = {"client_allowed_sans", "cert", "key"};
  return keys;
}

// exporter-toolkit's allow-list of response headers.
const std::set<std::string>& AllowedHeaders() {
  static const std::set<std::string> headers = {"Strict-Transport-Security", "X-Content-Type-Options",
                                                "X-Frame-Options", "X-XSS-Protection", "Content-Security-Policy"};
  return headers;
}

const std::map<std::string, std::string>& GoCurves() {
  static const std::map<std::string, std::string> curves = {
      {"X25519", "X25519"}, {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}};
  return curves;
}

// A YAML sequence of names, each mapped by `names`; joined with ':'.
Result<std::string> NameList(const Errors& errors, const YAML::Node& node, const std::string& key,
                             const std::map<std::string, std::string>& names) {
  using R = Result<std::string>;
  if (!node.IsSequence() || node.size() == 0) {
    return R::Error(errors.At(node, "tls_server_config." + key + " must be a non-empty list"));
  }
  std::string joined;
  for (const auto& item : node) {
    if (!item.IsScalar()) return R::Error(errors.At(item, "tls_server_config." + key + ": expected a name"));
    const auto it = names.find(item.Scalar());
    if (it == names.end()) {
      return R::Error(errors.At(
          item, "tls_server_config." + key + ": unknown name \"" + item.Scalar() + "\"; " +
                    (names.size() > 8
                         ? std::string("expected Go's crypto/tls names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
                         : "expected one of " + Choices(names))));
    }
    if (it->second.empty()) continue;  // a TLS 1.3 suite: always on
    joined += (joined.empty() ? "" : ":") + it->second;
  }
  return joined;
}

Result<std::string> Scalar(const Errors& errors, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) return Result<std::string>::Error(errors.At(node, what + " must be a string"));
  return node.Scalar();
}

Result<void> ParseTls(const Errors& errors, const YAML::Node& node, const std::filesystem::path& base,
                      TlsServerConfig* tls) {
  using R = Result<void>;
  if (!node.IsMap()) return R::Error(errors.At(node, "tls_server_config must be a mapping"));
  bool have_min = false;
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (UnsupportedTlsKeys().count(key) > 0) {
      return R::Error(errors.At(entry.first, "tls_server_config." + key + " is not supported by hostperf_exporter"));
    }
    if (key == "cipher_suites") {
      auto list = NameList(errors, value, key, GoCipherSuites());
      if (!list) return list.failure();
      // Only TLS 1.3 names: TLS 1.2 keeps the defaults.
      if (!list->empty()) tls->cipher_list = *list;
      continue;
    }
    if (key == "curve_preferences") {
      auto list = NameList(errors, value, key, GoCurves());
      if (!list) return list.failure();
      tls->groups = *list;
      continue;
    }
    auto text = Scalar(errors, value, "tls_server_config." + key);
    if (!text) return text.failure();
    if (key == "prefer_server_cipher_suites") {
      if (*text != "true" && *text != "false") {
        return R::Error(errors.At(value, "prefer_server_cipher_suites must be true or false"));
      }
      tls->prefer_server_cipher_suites = *text == "true";
      continue;
    }
    const auto path = [&] { return text->empty() ? std::filesystem::path() : base / *text; };
    if (key == "cert_file") {
      tls->cert_file = path();
    } else if (key == "key_file") {
      tls->key_file = path();
    } else if (key == "client_ca_file") {
      tls->client_ca_file = path();
    } else if (key == "client_auth_type") {
      const auto it = ClientAuthTypes().find(*text);
      if (it == ClientAuthTypes().end()) {
        return R::Error(errors.At(
            value, "invalid client_auth_type \"" + *text + "\"; expected one of " + Choices(ClientAuthTypes())));
      }
      tls->client_auth_type = it->second;
    } else if (key == "min_version" || key == "max_version") {
      const auto it = TlsVersions().find(*text);
      if (it == TlsVersions().end()) {
        return R::Error(
            errors.At(value, "invalid " + key + " \"" + *text + "\"; expected one of " + Choices(TlsVersions())));
      }
      (key == "min_version" ? tls->min_version : tls->max_version) = it->second;
      have_min = have_min || key == "min_version";
    } else {
      return R::Error(errors.At(entry.first, "unknown key tls_server_config." + key));
    }
  }
  if (tls->cert_file.empty()) return R::Error(errors.At(node, "tls_server_config needs cert_file"));
  if (tls->key_file.empty()) return R::Error(errors.At(node, "tls_server_config needs key_file"));
  if (tls->max_version != 0 && tls->max_version < tls->min_version) {
    if (have_min) return R::Error(errors.At(node, "tls_server_config: max_version is lower than min_version"));
    // Only max_version given: the default minimum must not exceed it.
    tls->min_version = tls->max_version;
  }
  if (NeedsClientCa(tls->client_auth_type) && tls->client_ca_file.empty()) {
    return R::Error(errors.At(node, "client_auth_type verifies client certificates but client_ca_file is not set"));
  }
  if (!tls->client_ca_file.empty() && tls->client_auth_type == ClientAuthType::kNoClientCert) {
    return R::Error(errors.At(node,
                              "client_ca_file is set but client_auth_type is NoClientCert: set client_auth_type "
                              "(e.g. RequireAndVerifyClientCert) or remove client_ca_file"));
  }
  return {};
}

Result<void> ParseHttp(const Errors& errors, const YAML::Node& node, WebConfig* config) {
  using R = Result<void>;
  if (!node.IsMap()) return R::Error(errors.At(node, "http_server_config must be a mapping"));
  for (const auto& entry : node) {
    const std::string key = entry.first.Scalar();
    const YAML::Node& value = entry.second;
    if (key == "http2") {
      // Accepted for compatibility; hostperf_exporter speaks HTTP/1.1 only.
      const std::string text = value.IsScalar() ? value.Scalar() : "";
      if (text != "true" && text != "false") return R::Error(errors.At(value, "http2 must be true or false"));
    } else if (key == "headers") {
      if (!value.IsMap()) return R::Error(errors.At(value, "http_server_config.headers must be a mapping"));
      for (const auto& header : value) {
        const std::string name = header.first.Scalar();
        if (AllowedHeaders().count(name) == 0) {
          return R::Error(errors.At(header.first, "header \"" + name + "\" cannot be set; allowed: " +
                                                      "Strict-Transport-Security, X-Content-Type-Options, "
                                                      "X-Frame-Options, X-XSS-Protection, Content-Security-Policy"));
        }
        auto text = Scalar(errors, header.second, "header " + name);
        if (!text) return text.failure();
        if (text->find_first_of("\r\n") != std::string::npos || text->empty()) {
          return R::Error(errors.At(header.second, "header " + name + " needs a one-line, non-empty value"));
        }
        config->headers.emplace_back(name, *text);
      }
    } else {
      return R::Error(errors.At(entry.first, "unknown key http_server_config." + key));
    }
  }
  return {};
}

Result<void> ParseUsers(const Errors& errors, const YAML::Node& node, WebConfig* config) {
  using R = Result<void>;
  if (node.IsNull()) return {};
  if (!node.IsMap()) return R::Error(errors.At(node, "basic_auth_users must be a mapping of user: bcrypt hash"));
  for (const auto& entry : node) {
    const std::string user = entry.first.Scalar();
    if (user.empty() || user.find(':') != std::string::npos) {
      return R::Error(errors.At(entry.first, "basic_auth_users: user name \"" + user + "\" is empty or has a ':'"));
    }
    auto hash = Scalar(errors, entry.second, "the password hash of user " + user);
    if (!hash) return hash.failure();
    if (!IsBcryptHash(*hash)) {
      return R::Error(errors.At(entry.second, "the password hash of user " + user +
                                                  " is not a bcrypt hash ($2y$<cost>$...; make one with "
                                                  "htpasswd -nBC 10 \"\" | tr -d ':\\n')"));
    }
    config->basic_auth_users[user] = *hash;
  }
  return {};
}

std::string OpenSslError() {
  std::string text;
  while (const unsigned long code = ERR_get_error()) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    text += (text.empty() ? "" : "; ") + std::string(buffer);
  }
  return text.empty() ? "unknown OpenSSL error" : text;
}

// Checked before OpenSSL so that a missing file reads as one, and so that a
// FIFO or a device named as a certificate or key is refused instead of
// blocking start-up or a reload (OpenSSL would open it and wait).
Result<void> Readable(const std::string& source, const std::string& what, const std::filesystem::path& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (error)
    return Result<void>::Error(source + ": cannot read " + what + " " + path.string() + ": " + error.message());
  if (!std::filesystem::is_regular_file(status)) {
    return Result<void>::Error(source + ": " + what + " " + path.string() + " is not a regular file");
  }
  // Readable by us, and not larger than a config file may be.
  if (auto text = ReadBoundedFile(path, what, kMaxConfigFileBytes); !text) {
    return Result<void>::Error(source + ": " + text.error());
  }
  return {};
}

int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*store*/) { return 1; }

}  // namespace

const std::map<std::string, std::string>& GoCipherSuites() {
  static const std::map<std::string, std::string> suites = {
      {"TLS_RSA_WITH_3DES_EDE_CBC_SHA", "DES-CBC3-SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
      {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
      {"TLS_RSA_WITH_AES_128_CBC_SHA256", "AES128-SHA256"},
      {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
      {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", "ECDHE-RSA-DES-CBC3-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
      {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", "ECDHE-ECDSA-AES128-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", "ECDHE-RSA-AES128-SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
      {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
      // Go's older spellings of the two above.
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA-CHACHA20-POLY1305"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA-CHACHA20-POLY1305"},
      {"TLS_AES_128_GCM_SHA256", ""},
      {"TLS_AES_256_GCM_SHA384", ""},
      {"TLS_CHACHA20_POLY1305_SHA256", ""},
  };
  return suites;
}

Result<WebConfig> ParseWebConfig(const std::string& text, const std::filesystem::path& file) {
  const Errors errors(file.string());
  WebConfig config;
  config.source = file.string();
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return Config::Error(file.string() + ":" + std::to_string(e.mark.line + 1) + ":" +
                         std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return Config::Error(errors.Plain(std::string("invalid YAML: ") + e.what()));
  }
  if (root.IsNull()) return config;  // an empty file: plain HTTP, no auth
  if (!root.IsMap()) return Config::Error(errors.At(root, "expected a mapping at the top level"));
  const std::filesystem::path base = file.parent_path();
  try {
    for (const auto& entry : root) {
      const std::string key = entry.first.Scalar();
      Result<void> parsed;
      if (key == "tls_server_config") {
        config.tls.emplace();
        parsed = ParseTls(errors, entry.second, base, &*config.tls);
      } else if (key == "http_server_config") {
        parsed = ParseHttp(errors, entry.second, &config);
      } else if (key == "basic_auth_users") {
        parsed = ParseUsers(errors, entry.second, &config);
      } else {
        parsed = Result<void>::Error(errors.At(entry.first, "unknown key \"" + key +
                                                                "\"; expected tls_server_config, http_server_config, "
                                                                "basic_auth_users"));
      }
      if (!parsed) return parsed.failure();
    }
  } catch (const std::exception& e) {
    // yaml-cpp throws on odd shapes (e.g. a mapping used as a key).
    return Config::Error(errors.Plain(std::string("unexpected structure: ") + e.what()));
  }
  return config;
}

Result<WebConfig> ReadWebConfig(const std::filesystem::path& file) {
  // A regular file of at most kMaxConfigFileBytes (hostperf/base/files.h).
  auto text = ReadBoundedFile(file, "", kMaxConfigFileBytes);
  if (!text) return Config::Error(text.error());
  return ParseWebConfig(*text, file);
}

namespace {

// The certificate chain and its private key, which must match.
Result<void> LoadKeyPair(SSL_CTX* ctx, const TlsServerConfig& tls, const std::string& source) {
  using R = Result<void>;
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
    return R::Error(source + ": cert_file " + tls.cert_file.string() + ": " + OpenSslError());
  }
  const std::string mismatch =
      source + ": key_file " + tls.key_file.string() + " does not match the certificate in " + tls.cert_file.string();
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return R::Error(mismatch);
    }
    return R::Error(source + ": key_file " + tls.key_file.string() + ": " + OpenSslError());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return R::Error(mismatch);
  }
  ERR_clear_error();
  return R::Ok();
}

// The TLS 1.2 cipher list, each named suite required to be there (OpenSSL
// silently drops unknown ones).
Result<void> SetCipherList(SSL_CTX* ctx, const TlsServerConfig& tls, const std::string& source) {
  using R = Result<void>;
  if (SSL_CTX_set_cipher_list(ctx, tls.cipher_list.c_str()) != 1) {
    return R::Error(source + ": cipher_suites: none of " + tls.cipher_list + " is available: " + OpenSslError());
  }
  for (std::size_t start = 0; start <= tls.cipher_list.size();) {
    const std::size_t end = std::min(tls.cipher_list.find(':', start), tls.cipher_list.size());
    const std::string name = tls.cipher_list.substr(start, end - start);
    bool found = false;
    STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(ctx);
    for (int i = 0; i < sk_SSL_CIPHER_num(ciphers) && !found; ++i) {
      found = name == SSL_CIPHER_get_name(sk_SSL_CIPHER_value(ciphers, i));
    }
    if (!found) return R::Error(source + ": cipher_suites: " + name + " is not available in this OpenSSL");
    start = end + 1;
  }
  return R::Ok();
}

// The CAs client certificates are checked against and named to clients.
Result<void> LoadClientCas(SSL_CTX* ctx, const TlsServerConfig& tls, const std::string& source) {
  using R = Result<void>;
  if (tls.client_ca_file.empty()) return R::Ok();
  if (SSL_CTX_load_verify_locations(ctx, tls.client_ca_file.c_str(), nullptr) != 1) {
    return R::Error(source + ": client_ca_file " + tls.client_ca_file.string() + ": " + OpenSslError());
  }
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
  if (names == nullptr) {
    return R::Error(source + ": client_ca_file " + tls.client_ca_file.string() + " holds no certificate");
  }
  SSL_CTX_set_client_CA_list(ctx, names);
  return R::Ok();
}

void SetClientVerification(SSL_CTX* ctx, ClientAuthType type) {
  switch (type) {
    case ClientAuthType::kNoClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuthType::kRequestClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAnyCertificate);
      break;
    case ClientAuthType::kRequireAnyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, AcceptAnyCertificate);
      break;
    case ClientAuthType::kVerifyClientCertIfGiven:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
      break;
    case ClientAuthType::kRequireAndVerifyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
}

}  // namespace

Result<TlsContextPtr> BuildTlsContext(const TlsServerConfig& tls, const std::string& source) {
  using R = Result<TlsContextPtr>;
  for (const auto& [what, path] : {std::pair<const char*, const std::filesystem::path&>{"cert_file", tls.cert_file},
                                   {"key_file", tls.key_file},
                                   {"client_ca_file", tls.client_ca_file}}) {
    if (path.empty()) continue;
    if (auto readable = Readable(source, what, path); !readable) return readable.failure();
  }
  ERR_clear_error();
  TlsContextPtr context(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!context) return R::Error(source + ": cannot create a TLS context: " + OpenSslError());
  SSL_CTX* ctx = context.get();
  if (auto loaded = LoadKeyPair(ctx, tls, source); !loaded) return loaded.failure();
  if (auto ciphers = SetCipherList(ctx, tls, source); !ciphers) return ciphers.failure();
  if (SSL_CTX_set1_groups_list(ctx, tls.groups.c_str()) != 1) {
    return R::Error(source + ": curve_preferences " + tls.groups + ": " + OpenSslError());
  }
  if (tls.prefer_server_cipher_suites) {
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  if (SSL_CTX_set_min_proto_version(ctx, tls.min_version) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, tls.max_version) != 1) {
    return R::Error(source + ": cannot set the TLS versions: " + OpenSslError());
  }
  if (auto cas = LoadClientCas(ctx, tls, source); !cas) return cas.failure();
  SetClientVerification(ctx, tls.client_auth_type);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  static constexpr unsigned char kSessionId[] = "hostperf";
  SSL_CTX_set_session_id_context(ctx, kSessionId, sizeof(kSessionId) - 1);
  return context;
}

bool IsBcryptHash(std::string_view hash) {
  // $2b$10$ + 53 characters of bcrypt's base64.
  if (hash.size() != 60 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' || hash[6] != '$') return false;
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return false;
  if (!std::isdigit(static_cast<unsigned char>(hash[4])) || !std::isdigit(static_cast<unsigned char>(hash[5]))) {
    return false;
  }
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(hash.begin() + 7, hash.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '/'; });
}

bool VerifyBcrypt(const std::string& password, const std::string& hash) {
  if (!IsBcryptHash(hash)) return false;
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on a worker's stack
  const char* computed = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (computed == nullptr || computed[0] == '*') return false;
  const std::size_t length = std::strlen(computed);
  return length == hash.size() && CRYPTO_memcmp(computed, hash.data(), length) == 0;
}

}  // namespace hostperf::http_security
