#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hostperf/base/result.h"

struct mg_context;
struct mg_request_info;
struct mg_connection;

namespace hostperf::http {

struct HttpRequest {
  std::string method;
  std::string path;
  std::string query;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string remote_address;

  std::string Header(const std::string& lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  static HttpResponse Text(int status, std::string body);
};

// What the server asks of whatever guards it (--web.config.file's
// WebSecurity): the server itself knows no auth scheme and no TLS config.
// Implementations are used from every worker thread at once.
class RequestGuard {
 public:
  virtual ~RequestGuard() = default;

  // Called for every request before its body is read. nullopt: the request
  // goes on to its route; else the response to send instead (a 401 with its
  // challenge).
  virtual std::optional<HttpResponse> Authorize(const HttpRequest& request) = 0;
  // Added to every response that a route (or the 404/500 fallback) produced.
  virtual std::vector<std::pair<std::string, std::string>> ResponseHeaders() const = 0;

  // Whether the listening port speaks TLS; fixed for the server's life.
  virtual bool tls_enabled() const = 0;
  // TLS only: readies CivetWeb for TLS, once per process, before the server
  // listens. An error stops HttpServer::Start.
  virtual Result<void> PrepareTls() = 0;
  // TLS only: the SSL_CTX (as void*) that CivetWeb accepts with. Owned by
  // the guard, which outlives the server; CivetWeb neither builds nor frees it.
  virtual void* AcceptContext() const = 0;
  // TLS only: `observer` is called on the worker thread at the start of
  // every TLS handshake, before the ClientHello is read, so that the server
  // can admit the connection before a slow or partial hello holds a worker.
  // Set before the server listens and cleared (nullptr) after it stopped.
  virtual void SetHandshakeObserver(std::function<void()> observer) = 0;
};

// Routes are matched on exact path; a key ending in "/*" ("/api/v1/runs/*")
// also matches every longer path under that prefix (the longest such key
// wins). The handler sees every method and answers 405 itself where needed.
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  // Prometheus style: ":9580" (all addresses), "127.0.0.1:9580",
  // "[::1]:9580". Port 0 picks a free port (see Ports()).
  std::string listen_address = ":9580";
  // CivetWeb serves one connection per worker thread, and an idle or
  // slow-drip connection holds its worker until request_timeout. The server
  // keeps some workers free whatever the clients do: beyond
  // MaxHeldConnections(worker_threads) connections in all, the oldest not
  // inside a request are shut down (docs/reliability.md, HTTP), so the pool
  // only needs to be as large as the scrapers and run-API clients that are
  // busy at once. Cost: CivetWeb hands connections to its workers in turn,
  // and each keeps ~18 KiB resident (stack pages) once it has served one: 256
  // workers (the old default) held 4.5 MiB after a few hundred scrapes.
  int worker_threads = 64;
  // A request must arrive in full within this time: slow or idle clients
  // give their worker back instead of holding it (and beyond
  // MaxHeldConnections the oldest of them are shut down sooner).
  std::chrono::milliseconds request_timeout{5000};
  // HTTP/1.1 keep-alive: after a response the worker waits this long for
  // the connection's next request, then closes it (0: every response says
  // Connection: close). Scrapers and back-to-back requests reuse their
  // connection (and TLS session) within it; an idle kept connection counts
  // as idle for max_connections_per_source and is evicted first like any
  // other. Shorter than common scrape intervals (15 s, 1 m) on purpose: such
  // a scraper reconnects, and no worker is held between its scrapes
  // (docs/reliability.md, "HTTP keep-alive").
  std::chrono::milliseconds keep_alive_timeout{10000};
  std::size_t max_body_bytes = 64 * 1024;
  // Connections one source (an IPv4 address, an IPv6 /64) may hold at once.
  // When a source opens one more, its oldest connection still waiting for a
  // request head is shut down (or, if all of them are busy with requests, the
  // new one): one client with idle, slow or partial-TLS connections holds at
  // most this many workers, and a scraper from another address always finds
  // one free (docs/reliability.md, "HTTP, round two"). Admission runs on the
  // worker as it picks the connection up, before it reads anything. A shed
  // connection is never closed unanswered: a request waiting on it whole is
  // answered 503 with Retry-After (its handler does not run), any other
  // plaintext one is sent that 503 before it is shut down (TLS ones are
  // shut down).
  int max_connections_per_source = 32;
  // Called (from a worker thread) for every connection shut down by that limit.
  std::function<void()> on_connection_evicted;
  // Called on the worker that finished the last request in flight, after its
  // response was sent: a scrape, or a burst of them, is over and their
  // buffers are freed.
  std::function<void()> on_idle;
  // --web.config.file: TLS on the listening port and basic auth in front of
  // every route. Null: plain HTTP, no auth.
  std::shared_ptr<RequestGuard> guard;
};

// Our own CivetWeb server: prometheus-cpp's Exposer cannot host more than
// metrics endpoints.
class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                   std::map<std::string, HttpHandler> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Ports actually bound (resolves port 0).
  std::vector<int> Ports() const;

 private:
  HttpServer(HttpServerOptions options, std::map<std::string, HttpHandler> routes);
  class ConnectionTable;
  static int HandleRequest(mg_connection* connection, void* self);
  int Dispatch(mg_connection* connection);
  // Requests CivetWeb parsed but did not route: the absolute form
  // ("GET http://host/metrics") and "OPTIONS *". Answered from CivetWeb's
  // connection_close callback, the only hook that sees them.
  void AnswerUnrouted(mg_connection* connection);
  // `unrouted`: from AnswerUnrouted, on a connection that is closing.
  int Serve(mg_connection* connection, HttpRequest request, bool unrouted = false);
  // How long the response may promise to keep the connection (0: close).
  std::int64_t KeepAliveSeconds(const mg_request_info* info) const;
  std::map<std::string, HttpHandler>::const_iterator FindRoute(const std::string& path) const;

  HttpServerOptions options_;
  std::map<std::string, HttpHandler> routes_;
  std::unique_ptr<ConnectionTable> connections_;
  std::atomic<int> in_flight_{0};  // requests inside Serve()
  mg_context* context_ = nullptr;
};

// What per-client limits count by, from a numeric address as in
// HttpRequest::remote_address: an IPv4 address, or an IPv6 /64 ("2001:db8::/64";
// v4-mapped addresses as IPv4). Unparsable text is returned as is.
std::string ClientSourceKey(const std::string& address);

// Connections the server lets all clients together hold before it shuts
// down the oldest idle ones: the workers less a reserve (an eighth, at least
// 2) left for new connections, among them the next scrape.
int MaxHeldConnections(int worker_threads);

// Translates Prometheus' listen-address syntax to CivetWeb's listening_ports.
Result<std::string> ToCivetwebPorts(const std::string& listen_address);

}  // namespace hostperf::http
