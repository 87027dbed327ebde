#include "hostperf/base/http_client.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <type_traits>

namespace hostperf {
namespace {

// libcurl is loaded on first use, not linked: the daemon needs it only for a
// full run that reads HDFS, and linking it loaded its 24 dependencies
// (GnuTLS, Kerberos, LDAP, libssh2, nghttp2, ...) into every daemon, 3.8 MiB
// of its 21 MiB resident set. systemd loads its optional
// libraries the same way. The table holds the functions this file calls;
// the types and constants still come from <curl/curl.h>.
// libcurl's SONAME since 7.16 (2006): Debian's libcurl4 (OpenSSL flavour;
// libcurl3-gnutls names its library libcurl-gnutls.so.4).
constexpr const char* kLibcurlSoname = "libcurl.so.4";

struct CurlApi {
  CURLcode (*global_init)(long);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
};

// The table, or the reason libcurl cannot be used; loaded and initialised
// once (curl_global_init is not thread-safe: call_once orders it).
const Result<const CurlApi*>& LoadCurl() {
  static const Result<const CurlApi*> loaded = []() -> Result<const CurlApi*> {
    using R = Result<const CurlApi*>;
    // Never closed: libcurl stays loaded for the life of the process.
    void* library = ::dlopen(kLibcurlSoname, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      return R::Error(std::string("cannot load ") + kLibcurlSoname +
                      " (Debian package libcurl4): " + (why != nullptr ? why : "unknown error"));
    }
    static CurlApi api;
    std::string missing;
    const auto bind = [&](auto& function, const char* name) {
      void* symbol = ::dlsym(library, name);
      if (symbol == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(symbol);
    };
    bind(api.global_init, "curl_global_init");
    bind(api.easy_init, "curl_easy_init");
    bind(api.easy_setopt, "curl_easy_setopt");
    bind(api.easy_perform, "curl_easy_perform");
    bind(api.easy_getinfo, "curl_easy_getinfo");
    bind(api.easy_cleanup, "curl_easy_cleanup");
    bind(api.easy_strerror, "curl_easy_strerror");
    bind(api.slist_append, "curl_slist_append");
    bind(api.slist_free_all, "curl_slist_free_all");
    if (!missing.empty()) return R::Error(std::string(kLibcurlSoname) + " lacks " + missing);
    if (const CURLcode code = api.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
      return R::Error("libcurl failed to initialise (curl_global_init: " + std::to_string(code) + ")");
    }
    return static_cast<const CurlApi*>(&api);
  }();
  return loaded;
}

const CurlApi& Curl() { return **LoadCurl(); }  // after Create() succeeded

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// "host:port" of a URL (userinfo and path dropped), for messages.
std::string Where(std::string_view url) {
  const auto scheme = url.find("://");
  std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  return std::string(rest);
}

Result<void> Readable(const std::filesystem::path& path, const char* what) {
  if (path.empty()) return Result<void>::Ok();
  if (::access(path.c_str(), R_OK) != 0) {
    return Result<void>::Error("cannot read the " + std::string(what) + " " + path.string() + ": " +
                               std::strerror(errno));
  }
  if (std::filesystem::is_directory(path)) {
    return Result<void>::Error("the " + std::string(what) + " " + path.string() + " is a directory");
  }
  return Result<void>::Ok();
}

// What the callbacks share with Send.
struct Transfer {
  CURL* curl = nullptr;
  const HttpRequest* request = nullptr;
  HttpReply* reply = nullptr;
  bool too_large = false;
  bool aborted = false;
};

std::size_t OnBody(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  const std::string_view chunk(data, n);
  long status = 0;
  if (transfer->request->on_body) Curl().easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
  if (transfer->request->on_body && status >= 200 && status < 300) {
    if (!transfer->request->on_body(chunk)) {
      transfer->aborted = true;
      return 0;
    }
    return n;
  }
  if (transfer->reply->body.size() + n > transfer->request->max_body) {
    transfer->too_large = true;
    return 0;
  }
  transfer->reply->body.append(chunk);
  return n;
}

std::size_t OnHeader(char* data, std::size_t size, std::size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  std::string_view line(data, n);
  // A new response (a redirect's target, a 401 before Negotiate): its headers alone.
  if (line.substr(0, 5) == "HTTP/") {
    transfer->reply->headers.clear();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || transfer->reply->headers.size() >= 200) return n;
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
    value.remove_suffix(1);
  }
  transfer->reply->headers.emplace_back(Lower(line.substr(0, colon)), std::string(value));
  return n;
}

bool IsTlsError(CURLcode code) {
  switch (code) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      return true;
    default:
      return false;
  }
}

struct CurlDeleter {
  void operator()(CURL* curl) const { Curl().easy_cleanup(curl); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const { Curl().slist_free_all(list); }
};

// Where, how long and through which callbacks one transfer runs.
void SetTransferOptions(const CurlApi& api, CURL* c, const HttpClientSettings& settings, const HttpRequest& request,
                        Transfer& transfer, char* error) {
  api.easy_setopt(c, CURLOPT_URL, request.url.c_str());
  api.easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  // Threads of our own: no SIGALRM-based resolver timeouts.
  api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  // Cluster-internal traffic: http_proxy and friends from the environment
  // would route it through a proxy that cannot reach the hosts.
  api.easy_setopt(c, CURLOPT_PROXY, "");
  api.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  api.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(settings.connect_timeout.count()));
  api.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  if (request.stall_timeout.count() > 0) {
    api.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    api.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(request.stall_timeout.count()));
  }
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  api.easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  api.easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  if (request.follow_redirects) {
    api.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    api.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    api.easy_setopt(c, CURLOPT_POSTREDIR, static_cast<long>(CURL_REDIR_POST_ALL));
  }
}

// The client's trust anchors, certificate and credentials.
void SetTlsAndAuthOptions(const CurlApi& api, CURL* c, const HttpClientSettings& settings) {
  if (!settings.ca_file.empty()) api.easy_setopt(c, CURLOPT_CAINFO, settings.ca_file.c_str());
  if (!settings.cert_file.empty()) {
    api.easy_setopt(c, CURLOPT_SSLCERT, settings.cert_file.c_str());
    api.easy_setopt(c, CURLOPT_SSLKEY, settings.key_file.c_str());
  }
  if (!settings.basic_user.empty()) {
    api.easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    api.easy_setopt(c, CURLOPT_USERNAME, settings.basic_user.c_str());
    api.easy_setopt(c, CURLOPT_PASSWORD, settings.basic_password.c_str());
  } else if (settings.negotiate) {
    // libcurl answers a 401 Negotiate challenge with a token from the ticket
    // cache; the empty user:password is how it is told to try.
    api.easy_setopt(c, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_NEGOTIATE));
    api.easy_setopt(c, CURLOPT_USERPWD, ":");
  }
}

// The request's headers plus a JSON content type for a body without one.
std::unique_ptr<curl_slist, SlistDeleter> RequestHeaders(const CurlApi& api, const HttpRequest& request,
                                                         bool sends_body) {
  curl_slist* raw_headers = nullptr;
  bool has_content_type = false;
  for (const auto& [name, value] : request.headers) {
    has_content_type = has_content_type || Lower(name) == "content-type";
    raw_headers = api.slist_append(raw_headers, (name + ": " + value).c_str());
  }
  if (sends_body && !has_content_type) {
    raw_headers = api.slist_append(raw_headers, "Content-Type: application/json");
  }
  // No 100-continue round trip before a body.
  raw_headers = api.slist_append(raw_headers, "Expect:");
  return std::unique_ptr<curl_slist, SlistDeleter>(raw_headers);
}

void SetMethodOptions(const CurlApi& api, CURL* c, const HttpRequest& request, bool sends_body) {
  if (request.method == "GET") {
    api.easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    api.easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else {
    if (request.method != "POST") api.easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (sends_body) {
      api.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
      api.easy_setopt(c, CURLOPT_POSTFIELDS, request.body.c_str());
    }
  }
}

// The classified error of a failed transfer: its kind and message.
Failure TransferFailure(CURLcode code, const Transfer& transfer, const HttpRequest& request, const std::string& url,
                        const std::string& detail) {
  const std::string where = Where(url);
  if (transfer.too_large) {
    return Failure{"too_large",
                   "the answer from " + where + " is larger than " + std::to_string(request.max_body >> 10) + " KiB"};
  }
  if (transfer.aborted) return Failure{"aborted", "the transfer from " + where + " was stopped"};
  if (code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_CONNECT) {
    return Failure{"unreachable", "cannot connect to " + where + ": " + detail};
  }
  if (code == CURLE_OPERATION_TIMEDOUT) {
    return Failure{"timeout",
                   "no answer from " + where + " within " + std::to_string(request.timeout.count()) + " ms: " + detail};
  }
  const bool https = url.rfind("https://", 0) == 0;
  // Under TLS 1.3 a refused client certificate arrives as an alert on the
  // first read, after the handshake looked done.
  const bool tls_alert =
      https && (code == CURLE_RECV_ERROR || code == CURLE_SEND_ERROR) && detail.find("SSL") != std::string::npos;
  if (IsTlsError(code) || tls_alert) return Failure{"tls", "TLS with " + where + " failed: " + detail};
  if (code == CURLE_GOT_NOTHING && !https) {
    return Failure{"transport", request.method + " " + where + " failed: " + detail + " (is it a TLS port?)"};
  }
  return Failure{"transport", request.method + " " + where + " failed: " + detail};
}

}  // namespace

std::string HttpReply::Header(std::string_view name) const {
  const std::string wanted = Lower(name);
  for (const auto& [key, value] : headers) {
    if (key == wanted) return value;
  }
  return {};
}

Result<std::unique_ptr<HttpClient>> HttpClient::Create(HttpClientSettings settings) {
  using R = Result<std::unique_ptr<HttpClient>>;
  if (settings.cert_file.empty() != settings.key_file.empty()) {
    return R::Error("a client certificate needs both a certificate file and a key file");
  }
  for (const auto& [path, what] :
       {std::pair{&settings.ca_file, "CA file"}, std::pair{&settings.cert_file, "client certificate file"},
        std::pair{&settings.key_file, "client key file"}}) {
    if (auto readable = Readable(*path, what); !readable) return R::Error(readable.error());
  }
  if (!settings.basic_user.empty() && settings.negotiate) {
    return R::Error("basic auth and SPNEGO exclude each other");
  }
  if (settings.basic_user.find(':') != std::string::npos) {
    return R::Error("a basic auth user name cannot contain ':'");
  }
  if (const auto& curl = LoadCurl(); !curl) return R::Error(curl.error());
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(settings)));
}

Result<HttpReply> HttpClient::Send(const HttpRequest& request) const {
  using R = Result<HttpReply>;
  const CurlApi& api = Curl();
  std::unique_ptr<CURL, CurlDeleter> curl(api.easy_init());
  if (!curl) return R::Error("transport", "cannot start an HTTP transfer (libcurl)");
  CURL* c = curl.get();
  HttpReply reply;
  Transfer transfer{c, &request, &reply};
  std::array<char, CURL_ERROR_SIZE> error{};

  SetTransferOptions(api, c, settings_, request, transfer, error.data());
  SetTlsAndAuthOptions(api, c, settings_);
  const bool sends_body = !request.body.empty() || request.method == "POST" || request.method == "PUT";
  const std::unique_ptr<curl_slist, SlistDeleter> headers = RequestHeaders(api, request, sends_body);
  api.easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  SetMethodOptions(api, c, request, sends_body);

  const CURLcode code = api.easy_perform(c);
  char* last_url = nullptr;
  api.easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &last_url);
  reply.url = last_url != nullptr ? last_url : request.url;
  const std::string detail = error[0] != '\0' ? error.data() : api.easy_strerror(code);
  if (code != CURLE_OK) return TransferFailure(code, transfer, request, reply.url, detail);
  long status = 0;
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  reply.status = static_cast<int>(status);
  return reply;
}

std::string HttpOrigin(bool tls, const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string UrlEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace hostperf
