#include "hostperf/http/http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace hostperf::http {
namespace {

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// Gives the calling thread's stack pages below its current frame back to the
// kernel (they read as zeros when touched again). Called by a worker as it
// closes a connection, near the top of its stack: CivetWeb's request path
// touches ~24 KiB of stack more than a waiting worker needs, and as CivetWeb
// hands connections to the workers in turn, every one of the 64 would keep
// those pages resident for good (1.5 MiB once scrapers have reconnected 64
// times). Nothing lives below the frame; two pages of margin cover this
// function's callees. Not on the main thread, whose stack grows on demand.
void ReleaseStackBelowThisFrame() {
  thread_local const std::uintptr_t lowest = [] {
    if (::gettid() == ::getpid()) return std::uintptr_t{0};
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return std::uintptr_t{0};
    void* address = nullptr;
    std::size_t size = 0;
    const bool known = pthread_attr_getstack(&attr, &address, &size) == 0;
    pthread_attr_destroy(&attr);
    return known ? reinterpret_cast<std::uintptr_t>(address) : std::uintptr_t{0};
  }();
  if (lowest == 0) return;
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const std::uintptr_t end = (frame & ~(page - 1)) - 2 * page;
  if (end > lowest) (void)::madvise(reinterpret_cast<void*>(lowest), end - lowest, MADV_DONTNEED);
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
    case 429:
      return "Too Many Requests";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

// `keep_alive_seconds` > 0: the connection stays open for the next request
// for that long (said in Keep-Alive, RFC 9112 9.3 and the de-facto header
// of RFC 2068 19.7.1); 0: it is closed after this response.
void SendResponse(mg_connection* connection, const HttpResponse& response, bool head_only,
                  std::int64_t keep_alive_seconds = 0) {
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " + std::string(StatusText(response.status)) +
                     "\r\nContent-Type: " + response.content_type +
                     "\r\nContent-Length: " + std::to_string(response.body.size()) + "\r\nCache-Control: no-store\r\n";
  head += keep_alive_seconds > 0
              ? "Connection: keep-alive\r\nKeep-Alive: timeout=" + std::to_string(keep_alive_seconds) + "\r\n"
              : std::string("Connection: close\r\n");
  for (const auto& [name, value] : response.headers) head += name + ": " + value + "\r\n";
  head += "\r\n";
  mg_write(connection, head.data(), head.size());
  if (!head_only && !response.body.empty()) mg_write(connection, response.body.data(), response.body.size());
}

// Whether the client asks to keep the connection, as CivetWeb 1.15 decides
// it after the handler (should_keep_alive): a Connection header decides by
// its keep-alive token, else HTTP/1.1 keeps and HTTP/1.0 closes.
bool ClientKeepsAlive(const mg_request_info* info) {
  for (int i = 0; i < info->num_headers; ++i) {
    if (strcasecmp(info->http_headers[i].name, "Connection") != 0) continue;
    const std::string value = Lower(info->http_headers[i].value);
    std::size_t start = 0;
    while (start <= value.size()) {
      auto end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string token = value.substr(start, end - start);
      token.erase(0, token.find_first_not_of(" \t"));
      token.erase(token.find_last_not_of(" \t") + 1);
      if (token == "keep-alive") return true;
      start = end + 1;
    }
    return false;
  }
  return info->http_version != nullptr && std::string_view(info->http_version) == "1.1";
}

// CivetWeb 1.15 decides whether to read another request from the request's
// Connection header once the handler returns, and has no call to make it
// close. A response sent before the body was read (or to an ambiguous
// length) must close the connection, or the unread body would be taken as
// the next request: point that header at "close". The handler has copied
// the headers already.
void ForceClose(mg_connection* connection) {
  auto* info = const_cast<mg_request_info*>(mg_get_request_info(connection));
  if (info == nullptr) return;
  for (int i = 0; i < info->num_headers; ++i) {
    if (strcasecmp(info->http_headers[i].name, "Connection") == 0) {
      info->http_headers[i].value = "close";
      return;
    }
  }
  const int slot = info->num_headers < MG_MAX_HEADERS ? info->num_headers++ : 0;
  info->http_headers[slot].name = "Connection";
  info->http_headers[slot].value = "close";
}

// "addr:port" of a socket address, as CivetWeb prints remote_addr.
std::string PeerText(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    port = ntohs(in.sin_port);
  } else {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(address);
    inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
    port = ntohs(in6.sin6_port);
  }
  return std::string(text) + ":" + std::to_string(port);
}

// What the per-source limit counts by: an IPv4 address, or an IPv6 /64 (one
// host usually owns a whole /64).
std::string SourceKey(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text, sizeof(text));
    return text;
  }
  const in6_addr& a = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&a)) {
    inet_ntop(AF_INET, &a.s6_addr[12], text, sizeof(text));
    return text;
  }
  in6_addr prefix{};
  std::memcpy(prefix.s6_addr, a.s6_addr, 8);
  inet_ntop(AF_INET6, &prefix, text, sizeof(text));
  return std::string(text) + "/64";
}

int LocalPort(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return -1;
}

// What a connection shed for load is told: come back in a second.
constexpr std::string_view kOverloadedResponse =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 58\r\n"
    "Cache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    "server busy: too many connections held open; retry in 1 s\n";

// Whether a whole request head waits unread on a plaintext socket (peeked,
// not consumed).
bool HeadPending(int fd) {
  char buffer[8192];
  const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_PEEK | MSG_DONTWAIT);
  return n > 0 && std::string_view(buffer, static_cast<std::size_t>(n)).find("\r\n\r\n") != std::string_view::npos;
}

// Set when CivetWeb itself answered the connection's request with an error
// (its http_error callback), so that the connection_close callback does not
// answer it a second time. CivetWeb serves a connection on one worker thread
// from init_connection to connection_close.
thread_local bool t_error_sent = false;

// The path and query of an absolute-form target ("http://host:1/a?b"), or
// nullopt if `target` is not one.
std::optional<std::pair<std::string, std::string>> AbsoluteFormPath(const std::string& target) {
  const std::string lower = Lower(target.substr(0, 8));
  std::size_t start = 0;
  if (lower.rfind("http://", 0) == 0) {
    start = 7;
  } else if (lower.rfind("https://", 0) == 0) {
    start = 8;
  } else {
    return std::nullopt;
  }
  const auto slash = target.find_first_of("/?", start);
  if (slash == start) return std::nullopt;  // no authority
  std::string rest = slash == std::string::npos ? "/" : target.substr(slash);
  if (rest.front() == '?') rest = "/" + rest;
  const auto question = rest.find('?');
  if (question == std::string::npos) return std::make_pair(rest, std::string());
  return std::make_pair(rest.substr(0, question), rest.substr(question + 1));
}

// Copies the request's headers, names lower-cased; returns how many
// Content-Length headers it carried.
int CopyHeaders(const mg_request_info& info, HttpRequest& request) {
  int content_lengths = 0;
  for (int i = 0; i < info.num_headers; ++i) {
    std::string name = Lower(info.http_headers[i].name);
    if (name == "content-length") ++content_lengths;
    request.headers[std::move(name)] = info.http_headers[i].value;
  }
  return content_lengths;
}

// Reads the body into `body`; false once it grows beyond `max_bytes`.
// Without Content-Length (chunked) this reads up to the limit and refuses beyond.
bool ReadBody(mg_connection* connection, std::size_t max_bytes, std::string& body) {
  char buffer[8192];
  for (;;) {
    const int n = mg_read(connection, buffer, sizeof(buffer));
    if (n <= 0) return true;
    body.append(buffer, static_cast<std::size_t>(n));
    if (body.size() > max_bytes) return false;
  }
}

HttpResponse RunHandler(const HttpHandler& handler, const HttpRequest& request) {
  try {
    return handler(request);
  } catch (const std::exception& e) {
    // A handler bug must not take the server down.
    spdlog::error("http handler for {} failed: {}", request.path, e.what());
  } catch (...) {
    // Nothing may unwind into CivetWeb's C code.
    spdlog::error("http handler for {} failed with a non-standard exception", request.path);
  }
  return HttpResponse::Text(500, "internal error");
}

// CivetWeb's configuration as name/value strings; the strings live as long
// as this object, the pointer list ends with nullptr.
class CivetConfig {
 public:
  CivetConfig(const HttpServerOptions& options, std::string ports)
      : ports_(std::move(ports)),
        threads_(std::to_string(options.worker_threads)),
        timeout_(std::to_string(options.request_timeout.count())),
        keep_alive_(options.keep_alive_timeout.count() > 0),
        keep_alive_timeout_(std::to_string(keep_alive_ ? options.keep_alive_timeout.count() : 0)) {}

  std::array<const char*, 13> Options() const {
    return {"listening_ports",
            ports_.c_str(),
            "num_threads",
            threads_.c_str(),
            "request_timeout_ms",
            timeout_.c_str(),
            "enable_keep_alive",
            keep_alive_ ? "yes" : "no",
            "keep_alive_timeout_ms",
            keep_alive_timeout_.c_str(),
            "listen_backlog",
            "256",
            nullptr};
  }

 private:
  std::string ports_;
  std::string threads_;
  std::string timeout_;
  bool keep_alive_;
  std::string keep_alive_timeout_;
};

// CivetWeb logs to stderr by default; route its messages through spdlog.
int LogCivetMessage(const mg_connection* /*connection*/, const char* message) {
  spdlog::debug("http: {}", message);
  return 1;
}

int NoteErrorPage(mg_connection* /*connection*/, int /*status*/, const char* /*message*/) {
  t_error_sent = true;
  return 1;  // CivetWeb sends its error page
}

}  // namespace

// Every open connection to the server's ports, found by walking the
// process's descriptors (CivetWeb 1.15 has no accept hook and tells its
// init_connection callback nothing about the connection), keyed by socket
// inode so that a descriptor number reused for another socket is not
// mistaken for the old one. A walk registers new connections and forgets
// closed ones; a source over the limit gets its oldest connection that is
// not inside a request shut down. Shutting a socket down makes the worker
// that reads it (or will) see EOF at once and move on.
class HttpServer::ConnectionTable {
 public:
  // `max_total`: connections held across all sources before the oldest idle
  // ones go (0: no such bound).
  // `tls`: the sockets carry TLS records, so nothing is written to or
  // peeked from them here.
  ConnectionTable(int per_source, int max_total, std::function<void()> on_evicted, bool tls)
      : per_source_(per_source), max_total_(max_total), on_evicted_(std::move(on_evicted)), tls_(tls) {}

  // The ports bound (known once the server listens); no walk before.
  void SetPorts(std::vector<int> ports) {
    std::lock_guard lock(mu_);
    ports_ = std::move(ports);
  }

  void Scan() {
    {
      std::lock_guard lock(mu_);
      if (ports_.empty() || (per_source_ <= 0 && max_total_ <= 0)) return;
    }
    std::vector<int> fds;
    if (DIR* dir = opendir("/proc/self/fd")) {
      const int own = dirfd(dir);
      while (const dirent* entry = readdir(dir)) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        const int fd = std::atoi(entry->d_name);
        if (fd != own) fds.push_back(fd);
      }
      closedir(dir);
    }
    std::lock_guard lock(mu_);
    ++generation_;
    std::unordered_set<std::string> grown;
    for (const int fd : fds) {
      struct stat st {};
      if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
      const ino_t inode = st.st_ino;
      if (auto it = live_.find(inode); it != live_.end()) {
        it->second.seen = generation_;
        it->second.fd = fd;
        continue;
      }
      if (auto it = ignored_.find(inode); it != ignored_.end()) {
        it->second = generation_;
        continue;
      }
      sockaddr_storage local{};
      sockaddr_storage peer{};
      socklen_t local_length = sizeof(local);
      socklen_t peer_length = sizeof(peer);
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_length) != 0 ||
          std::find(ports_.begin(), ports_.end(), LocalPort(local)) == ports_.end() ||
          getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_length) != 0 ||
          (peer.ss_family != AF_INET && peer.ss_family != AF_INET6)) {
        ignored_[inode] = generation_;  // a listener, a file, another component's socket
        continue;
      }
      Entry entry{fd, SourceKey(peer), PeerText(peer), ++order_, generation_, false, false};
      entry.busy = busy_peers_.count(entry.peer) > 0;
      by_peer_[entry.peer] = inode;
      grown.insert(entry.source);
      live_.emplace(inode, std::move(entry));
    }
    for (auto it = live_.begin(); it != live_.end();) {
      if (it->second.seen == generation_) {
        ++it;
        continue;
      }
      // The same address:port may already name a newer connection (a reused
      // source port): only this connection's own mapping goes.
      if (const auto mapped = by_peer_.find(it->second.peer); mapped != by_peer_.end() && mapped->second == it->first) {
        by_peer_.erase(mapped);
      }
      it = live_.erase(it);
    }
    for (auto it = ignored_.begin(); it != ignored_.end();) {
      it = it->second == generation_ ? std::next(it) : ignored_.erase(it);
    }
    if (per_source_ > 0) {
      for (const std::string& source : grown) Enforce(source);
    }
    if (!grown.empty()) EnforceTotal();
  }

  // Inside a request (head read, not yet answered): not evicted.
  // A request can start on a connection the table has not registered yet;
  // it is remembered, so that the walk that registers it does not evict it
  // while its handler runs.
  void SetBusy(const std::string& peer, bool busy) {
    std::lock_guard lock(mu_);
    if (busy) {
      busy_peers_.insert(peer);
    } else {
      busy_peers_.erase(peer);
    }
    const auto it = by_peer_.find(peer);
    if (it == by_peer_.end()) return;
    if (const auto entry = live_.find(it->second); entry != live_.end()) entry->second.busy = busy;
  }

  // Evicted for load: a request on it is not served. `answer_503`: the
  // worker is to answer it 503 (the whole head was waiting when it was
  // shed); otherwise the scan answered (or, under TLS, closed) it already.
  bool Shed(const std::string& peer, bool* answer_503) {
    std::lock_guard lock(mu_);
    const auto it = by_peer_.find(peer);
    if (it == by_peer_.end()) return false;
    const auto entry = live_.find(it->second);
    if (entry == live_.end() || !entry->second.evicted) return false;
    *answer_503 = entry->second.answer_503;
    return true;
  }

 private:
  struct Entry {
    int fd;
    std::string source;
    std::string peer;
    std::uint64_t order;  // registration order: lower is older
    std::uint64_t seen;   // the last walk that found it
    bool busy;
    bool evicted;
    bool answer_503 = false;
  };

  // One source beyond per_source_: its oldest connections not inside a
  // request go first.
  void Enforce(const std::string& source) {
    EvictOldestIdle(per_source_, [&source](const Entry& entry) { return entry.source == source; });
  }

  // All sources together beyond max_total_ (fewer than the workers): the
  // oldest idle connections go, whatever their source, so that many sources
  // together cannot hold every worker and a new connection always finds one.
  void EnforceTotal() {
    if (max_total_ > 0) EvictOldestIdle(max_total_, [](const Entry&) { return true; });
  }

  template <typename Counted>
  void EvictOldestIdle(int limit, const Counted& counted) {
    std::vector<std::pair<std::uint64_t, ino_t>> idle;
    int held = 0;
    for (const auto& [inode, entry] : live_) {
      if (entry.evicted || !counted(entry)) continue;
      ++held;
      if (!entry.busy) idle.emplace_back(entry.order, inode);
    }
    if (held <= limit) return;
    std::sort(idle.begin(), idle.end());
    for (std::size_t i = 0; i < idle.size() && held > limit; ++i, --held) {
      Entry& entry = live_.at(idle[i].second);
      // The descriptor must still be that socket: another thread may close
      // the number and reuse it at any time, so check and shut down a
      // duplicate, which keeps naming what it was made from. Nobody is left
      // without an answer: a whole request waiting unread is answered 503 by
      // the worker that picks it up (quickly: nothing more to read); any
      // other plaintext connection is told 503 before it is shut down.
      if (const int copy = ::fcntl(entry.fd, F_DUPFD_CLOEXEC, 0); copy >= 0) {
        struct stat st {};
        if (fstat(copy, &st) == 0 && st.st_ino == idle[i].second) {
          if (!tls_ && HeadPending(copy)) {
            entry.answer_503 = true;
          } else {
            if (!tls_) {
              (void)::send(copy, kOverloadedResponse.data(), kOverloadedResponse.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            }
            ::shutdown(copy, SHUT_RDWR);
          }
        }
        ::close(copy);
      }
      entry.evicted = true;
      if (on_evicted_) on_evicted_();
    }
  }

  std::vector<int> ports_;
  const int per_source_;
  const int max_total_;
  const std::function<void()> on_evicted_;
  const bool tls_;
  std::mutex mu_;
  std::uint64_t generation_ = 0;
  std::uint64_t order_ = 0;
  std::unordered_map<ino_t, Entry> live_;
  std::unordered_map<ino_t, std::uint64_t> ignored_;  // inode -> last walk that saw it
  std::unordered_map<std::string, ino_t> by_peer_;
  // Peers inside a request (SetBusy), registered or not: one per request in flight.
  std::unordered_set<std::string> busy_peers_;
};

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

int MaxHeldConnections(int worker_threads) { return std::max(1, worker_threads - std::max(2, worker_threads / 8)); }

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

std::string ClientSourceKey(const std::string& address) {
  sockaddr_storage storage{};
  auto& in = reinterpret_cast<sockaddr_in&>(storage);
  auto& in6 = reinterpret_cast<sockaddr_in6&>(storage);
  if (inet_pton(AF_INET, address.c_str(), &in.sin_addr) == 1) {
    storage.ss_family = AF_INET;
  } else if (inet_pton(AF_INET6, address.c_str(), &in6.sin6_addr) == 1) {
    storage.ss_family = AF_INET6;
  } else {
    return address;
  }
  return SourceKey(storage);
}

HttpServer::HttpServer(HttpServerOptions options, std::map<std::string, HttpHandler> routes)
    : options_(std::move(options)), routes_(std::move(routes)) {}

HttpServer::~HttpServer() {
  if (context_ != nullptr) mg_stop(context_);
  if (options_.guard != nullptr && options_.guard->tls_enabled()) options_.guard->SetHandshakeObserver(nullptr);
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
  server->connections_ =
      std::make_unique<ConnectionTable>(options.max_connections_per_source, MaxHeldConnections(options.worker_threads),
                                        options.on_connection_evicted, tls);
  const CivetConfig config(options, *ports);
  auto civet_options = config.Options();
  mg_callbacks callbacks{};
  callbacks.log_message = LogCivetMessage;
  // A worker picked a connection up and is about to read from it: admit it
  // (per-source limit) first. For TLS the handshake observer does the same
  // before the handshake reads the ClientHello.
  callbacks.init_connection = [](const mg_connection* connection, void** /*conn_data*/) {
    t_error_sent = false;
    const mg_context* context = mg_get_context(connection);
    auto* self = context != nullptr ? static_cast<HttpServer*>(mg_get_user_data(context)) : nullptr;
    if (self != nullptr) self->connections_->Scan();
    return 0;
  };
  callbacks.http_error = NoteErrorPage;
  callbacks.connection_close = [](const mg_connection* connection) {
    const mg_context* context = mg_get_context(connection);
    auto* self = context != nullptr ? static_cast<HttpServer*>(mg_get_user_data(context)) : nullptr;
    if (self != nullptr) self->AnswerUnrouted(const_cast<mg_connection*>(connection));
    ReleaseStackBelowThisFrame();
  };
  if (tls) {
    // The guard's own SSL_CTX: CivetWeb neither builds nor frees it.
    callbacks.external_ssl_ctx = [](void** ssl_ctx, void* user_data) {
      if (*ssl_ctx == nullptr) *ssl_ctx = static_cast<HttpServer*>(user_data)->options_.guard->AcceptContext();
      return 1;
    };
    ConnectionTable* table = server->connections_.get();
    options.guard->SetHandshakeObserver([table] { table->Scan(); });
  }
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = civet_options.data();
  char error_text[256] = {0};
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    if (tls) options.guard->SetHandshakeObserver(nullptr);
    return R::Error("cannot listen on " + options.listen_address + ": " +
                    (error_text[0] != '\0' ? std::string(error_text) : "unknown error"));
  }
  server->connections_->SetPorts(server->Ports());
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
  request.path = info->local_uri != nullptr ? info->local_uri : "/";
  request.query = info->query_string != nullptr ? info->query_string : "";
  return Serve(connection, std::move(request));
}

void HttpServer::AnswerUnrouted(mg_connection* connection) {
  const mg_request_info* info = mg_get_request_info(connection);
  if (t_error_sent || info == nullptr || info->local_uri != nullptr || info->request_method == nullptr ||
      info->request_uri == nullptr) {
    return;
  }
  t_error_sent = true;
  const std::string target = info->request_uri;
  const bool head_only = std::string_view(info->request_method) == "HEAD";
  if (target == "*") {
    // RFC 9110 9.3.7: OPTIONS * asks about the server as a whole.
    HttpResponse response;
    if (std::string_view(info->request_method) == "OPTIONS") {
      response.status = 200;
      response.headers.emplace_back("Allow", "GET, HEAD, POST, OPTIONS");
    } else {
      response = HttpResponse::Text(400, "the target \"*\" is for OPTIONS only");
    }
    SendResponse(connection, response, head_only);
    return;
  }
  // RFC 9112 3.2.2: a server MUST accept the absolute form; its authority
  // names this server (we are no proxy), the path is routed as usual.
  const auto absolute = AbsoluteFormPath(target);
  if (!absolute) {
    SendResponse(connection, HttpResponse::Text(400, "invalid request target"), head_only);
    return;
  }
  HttpRequest request;
  request.path = absolute->first;
  request.query = absolute->second;
  (void)Serve(connection, std::move(request), /*unrouted=*/true);
}

int HttpServer::Serve(mg_connection* connection, HttpRequest request, bool unrouted) {
  const mg_request_info* info = mg_get_request_info(connection);
  request.method = info->request_method != nullptr ? info->request_method : "";
  request.remote_address = info->remote_addr;
  const int content_lengths = CopyHeaders(*info, request);
  const bool head_only = request.method == "HEAD";
  const std::string peer = request.remote_address + ":" + std::to_string(info->remote_port);
  connections_->SetBusy(peer, true);
  struct Idle {
    ConnectionTable& table;
    const std::string& peer;
    ~Idle() { table.SetBusy(peer, false); }
  } idle{*connections_, peer};
  in_flight_.fetch_add(1);
  struct Finished {
    HttpServer& server;
    ~Finished() {
      if (server.in_flight_.fetch_sub(1) == 1 && server.options_.on_idle) server.options_.on_idle();
    }
  } finished{*this};
  // RFC 9112 6.3: a repeated (or list-valued) Content-Length, or one beside
  // Transfer-Encoding, makes the message's length ambiguous (request
  // smuggling): refused, and the connection closed after the response.
  // Answered before the body was read: the connection closes after it.
  const auto refuse = [connection, head_only](const HttpResponse& response) {
    ForceClose(connection);
    SendResponse(connection, response, head_only);
    return response.status;
  };
  // Shed for load: no handler runs; 503 with Retry-After if nobody has
  // answered it yet.
  if (bool answer_503 = false; connections_->Shed(peer, &answer_503)) {
    ForceClose(connection);
    if (!answer_503) return 503;
    HttpResponse busy = HttpResponse::Text(503, "server busy: too many connections held open; retry in 1 s");
    busy.headers.emplace_back("Retry-After", "1");
    SendResponse(connection, busy, head_only);
    return busy.status;
  }
  if (content_lengths > 1 || (content_lengths == 1 && (!AllDigits(request.Header("content-length")) ||
                                                       !request.Header("transfer-encoding").empty()))) {
    return refuse(HttpResponse::Text(400, "ambiguous message length: Content-Length"));
  }
  // The request has a body unless it says Content-Length: 0 or nothing.
  const bool has_body = info->content_length > 0 || !request.Header("transfer-encoding").empty();
  if (options_.guard != nullptr) {
    // Basic auth gates every route, before the body is read.
    if (auto denied = options_.guard->Authorize(request)) {
      if (has_body) return refuse(*denied);
      SendResponse(connection, *denied, head_only, KeepAliveSeconds(info));
      return denied->status;
    }
  }

  if (info->content_length > static_cast<long long>(options_.max_body_bytes)) {
    return refuse(
        HttpResponse::Text(413, "request body larger than " + std::to_string(options_.max_body_bytes) + " bytes"));
  }
  if (!ReadBody(connection, options_.max_body_bytes, request.body)) {
    return refuse(HttpResponse::Text(413, "request body too large"));
  }

  const auto route = FindRoute(request.path);
  HttpResponse response = route == routes_.end() ? HttpResponse::Text(404, "not found: " + request.path)
                                                 : RunHandler(route->second, request);
  if (options_.guard != nullptr) {
    for (auto& header : options_.guard->ResponseHeaders()) response.headers.push_back(std::move(header));
  }
  SendResponse(connection, response, head_only, unrouted ? 0 : KeepAliveSeconds(info));
  return response.status;
}

std::int64_t HttpServer::KeepAliveSeconds(const mg_request_info* info) const {
  if (options_.keep_alive_timeout.count() <= 0 || !ClientKeepsAlive(info)) return 0;
  // Whole seconds, rounded up: a client that waits that long finds it closed.
  return (options_.keep_alive_timeout.count() + 999) / 1000;
}

}  // namespace hostperf::http
