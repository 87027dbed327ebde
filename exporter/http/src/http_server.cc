#include "hostperf/http/http_server.h"

#include <civetweb.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace hostperf::exporter {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

bool AllDigits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

void InitLibraryOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mg_init_library(0); });
}

std::string_view StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

void SendResponse(mg_connection* connection, const HttpResponse& response, bool head_only) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + std::string(StatusText(response.status)) +
                     "\r\nContent-Type: " + response.content_type +
                     "\r\nContent-Length: " + std::to_string(response.body.size()) +
                     "\r\nCache-Control: no-store\r\nConnection: close\r\n";
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  mg_write(connection, head.data(), head.size());
  if (!head_only && !response.body.empty()) mg_write(connection, response.body.data(), response.body.size());
}

}  // namespace

std::string HttpRequest::Header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  if (response.body.empty() || response.body.back() != '\n') response.body += '\n';
  return response;
}

Result<std::string> ToCivetwebPorts(const std::string& listen_address) {
  using R = Result<std::string>;
  const auto colon = listen_address.rfind(':');
  if (colon == std::string::npos) {
    return R::Error("invalid listen address \"" + listen_address + "\": expected [host]:port");
  }
  std::string host = listen_address.substr(0, colon);
  const std::string port = listen_address.substr(colon + 1);
  if (!AllDigits(port) || port.size() > 5 || std::stoi(port) > 65535) {
    return R::Error("invalid listen address \"" + listen_address + "\": bad port \"" + port + "\"");
  }
  if (host.empty() || host == "0.0.0.0") return R(port);
  if (host == "[::]") return R("[::]:" + port);
  if (host == "localhost") host = "127.0.0.1";
  if (host.front() == '[') {
    if (host.back() != ']') return R::Error("invalid listen address \"" + listen_address + "\": unclosed [");
    return R(host + ":" + port);
  }
  // CivetWeb takes literal addresses only.
  const bool ipv4 = std::all_of(host.begin(), host.end(), [](unsigned char c) { return std::isdigit(c) || c == '.'; });
  if (!ipv4) {
    return R::Error("invalid listen address \"" + listen_address +
                    "\": use an IP address (\"127.0.0.1:9580\", \"[::1]:9580\") or \":9580\"");
  }
  return R(host + ":" + port);
}

HttpServer::HttpServer(HttpServerOptions options, std::map<std::string, HttpHandler> routes)
    : options_(std::move(options)), routes_(std::move(routes)) {}

HttpServer::~HttpServer() {
  if (context_ != nullptr) mg_stop(context_);
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                      std::map<std::string, HttpHandler> routes) {
  using R = Result<std::unique_ptr<HttpServer>>;
  auto ports = ToCivetwebPorts(options.listen_address);
  if (!ports) return ports.failure();
  const bool tls = options.guard != nullptr && options.guard->tls_enabled();
  if (tls) {
    if (auto prepared = options.guard->PrepareTls(); !prepared) return prepared.failure();
    ports.value() += "s";
  }
  InitLibraryOnce();
  std::unique_ptr<HttpServer> server(new HttpServer(options, std::move(routes)));
  const std::string threads = std::to_string(options.worker_threads);
  const std::string timeout = std::to_string(options.request_timeout.count());
  const char* civet_options[] = {"listening_ports",
                                 ports->c_str(),
                                 "num_threads",
                                 threads.c_str(),
                                 "request_timeout_ms",
                                 timeout.c_str(),
                                 "enable_keep_alive",
                                 "no",
                                 "listen_backlog",
                                 "256",
                                 nullptr};
  mg_callbacks callbacks{};
  // CivetWeb logs to stderr by default; route its messages through spdlog.
  callbacks.log_message = [](const mg_connection*, const char* message) {
    spdlog::debug("http: {}", message);
    return 1;
  };
  if (tls) {
    // The guard's own SSL_CTX: CivetWeb neither builds nor frees it.
    callbacks.external_ssl_ctx = [](void** ssl_ctx, void* user_data) {
      if (*ssl_ctx == nullptr) *ssl_ctx = static_cast<HttpServer*>(user_data)->options_.guard->AcceptContext();
      return 1;
    };
  }
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = civet_options;
  char error_text[256] = {0};
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    return R::Error("cannot listen on " + options.listen_address + ": " +
                    (error_text[0] != '\0' ? std::string(error_text) : "unknown error"));
  }
  mg_set_request_handler(server->context_, "/", &HttpServer::HandleRequest, server.get());
  return R(std::move(server));
}

std::vector<int> HttpServer::Ports() const {
  mg_server_port ports[8];
  const int n = mg_get_server_ports(context_, 8, ports);
  std::vector<int> result;
  for (int i = 0; i < n; ++i) result.push_back(ports[i].port);
  return result;
}

std::map<std::string, HttpHandler>::const_iterator HttpServer::FindRoute(const std::string& path) const {
  if (const auto exact = routes_.find(path); exact != routes_.end()) return exact;
  // "/prefix/*" routes: the longest matching prefix wins.
  auto best = routes_.end();
  for (auto it = routes_.begin(); it != routes_.end(); ++it) {
    const std::string& key = it->first;
    if (key.size() < 2 || key.compare(key.size() - 2, 2, "/*") != 0) continue;
    const std::size_t prefix = key.size() - 1;  // keeps the '/'
    if (path.size() > prefix && path.compare(0, prefix, key, 0, prefix) == 0 &&
        (best == routes_.end() || key.size() > best->first.size())) {
      best = it;
    }
  }
  return best;
}

int HttpServer::HandleRequest(mg_connection* connection, void* self) {
  return static_cast<HttpServer*>(self)->Dispatch(connection);
}

int HttpServer::Dispatch(mg_connection* connection) {
  const mg_request_info* info = mg_get_request_info(connection);
  HttpRequest request;
  request.method = info->request_method != nullptr ? info->request_method : "";
  request.path = info->local_uri != nullptr ? info->local_uri : "/";
  request.query = info->query_string != nullptr ? info->query_string : "";
  request.remote_address = info->remote_addr;
  for (int i = 0; i < info->num_headers; ++i) {
    request.headers[Lower(info->http_headers[i].name)] = info->http_headers[i].value;
  }
  const bool head_only = request.method == "HEAD";
  if (options_.guard != nullptr) {
    // Basic auth gates every route, before the body is read.
    if (auto denied = options_.guard->Authorize(request)) {
      SendResponse(connection, *denied, head_only);
      return denied->status;
    }
  }

  if (info->content_length > static_cast<long long>(options_.max_body_bytes)) {
    SendResponse(
        connection,
        HttpResponse::Text(413, "request body larger than " + std::to_string(options_.max_body_bytes) + " bytes"),
        head_only);
    return 413;
  }
  // Without Content-Length (chunked) read up to the limit and refuse beyond.
  char buffer[8192];
  for (;;) {
    const int n = mg_read(connection, buffer, sizeof(buffer));
    if (n <= 0) break;
    request.body.append(buffer, static_cast<std::size_t>(n));
    if (request.body.size() > options_.max_body_bytes) {
      SendResponse(connection, HttpResponse::Text(413, "request body too large"), head_only);
      return 413;
    }
  }

  HttpResponse response;
  const auto route = FindRoute(request.path);
  if (route == routes_.end()) {
    response = HttpResponse::Text(404, "not found: " + request.path);
  } else {
    try {
      response = route->second(request);
    } catch (const std::exception& e) {
      // A handler bug must not take the server down.
      spdlog::error("http handler for {} failed: {}", request.path, e.what());
      response = HttpResponse::Text(500, "internal error");
    } catch (...) {
      // Nothing may unwind into CivetWeb's C code.
      spdlog::error("http handler for {} failed with a non-standard exception", request.path);
      response = HttpResponse::Text(500, "internal error");
    }
  }
  if (options_.guard != nullptr) {
    for (auto& header : options_.guard->ResponseHeaders()) response.headers.push_back(std::move(header));
  }
  SendResponse(connection, response, head_only);
  return response.status;
}

}  // namespace hostperf::exporter
