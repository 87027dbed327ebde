#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hostperf/base/result.h"

namespace hostperf {

// The one HTTP client of hostperf (libcurl): the run-API client of
// `hostperf check` and WebHDFS. One transfer per call on its own handle, so
// calls from several threads do not share state. Proxies from the environment
// (http_proxy, ...) are not used: the servers are the cluster's own hosts.

// TLS and authentication toward a set of servers. All optional.
struct HttpClientSettings {
  std::filesystem::path ca_file;    // trust these CAs instead of the system's
  std::filesystem::path cert_file;  // a client certificate (mutual TLS) ...
  std::filesystem::path key_file;   // ... and its key: both or neither
  std::string basic_user;           // set: Authorization: Basic on every request
  std::string basic_password;
  bool negotiate = false;  // SPNEGO (Kerberos through GSS-API, the caller's ticket cache)
  std::chrono::milliseconds connect_timeout{10000};
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                          // sent with Content-Type: application/json unless a header says otherwise
  std::chrono::milliseconds timeout{10000};  // the whole transfer
  bool follow_redirects = false;             // at most 5, keeping the method
  std::size_t max_body = 16 * 1024 * 1024;   // a larger answer is an error (reason too_large)
  // Set: a 2xx answer's body is handed over as it arrives instead of kept in
  // the reply (other answers' bodies, error documents, are kept as usual);
  // returning false stops the transfer (reason aborted).
  std::function<bool(std::string_view)> on_body;
  // Set: a transfer that receives nothing for this long fails (reason
  // timeout) even within `timeout`: long streamed reads.
  std::chrono::seconds stall_timeout{0};
};

struct HttpReply {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // of the last response, names lowercase
  std::string url;                                           // the last URL, after redirects
  // The value of header `name` (any case), or "".
  std::string Header(std::string_view name) const;
};

class HttpClient {
 public:
  // Checks the settings (cert without key, unreadable files) before any
  // request; the errors name the file.
  static Result<std::unique_ptr<HttpClient>> Create(HttpClientSettings settings);

  // One request. Transfer failures are errors with a reason: unreachable
  // (resolve, connect), timeout, tls (handshake, certificate), too_large,
  // aborted (on_body said stop), transport (anything else). The messages
  // name the server as host:port. HTTP statuses are not errors.
  Result<HttpReply> Send(const HttpRequest& request) const;

  const HttpClientSettings& settings() const { return settings_; }

 private:
  explicit HttpClient(HttpClientSettings settings) : settings_(std::move(settings)) {}
  HttpClientSettings settings_;
};

// "http(s)://host:port" with an IPv6 address in brackets.
std::string HttpOrigin(bool tls, const std::string& host, std::uint16_t port);

// `text` with every byte outside RFC 3986's unreserved set percent-encoded
// (for query values and path segments).
std::string UrlEncode(std::string_view text);

}  // namespace hostperf
