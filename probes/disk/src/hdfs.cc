#include "hostperf/probes/disk/hdfs.h"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "hostperf/base/files.h"

namespace hostperf::probes::disk::hdfs {
namespace {

using nlohmann::json;

// Hadoop 3's NameNode web ports (dfs.namenode.http-address, https-address)
// and its RPC port (fs.defaultFS without a port).
constexpr std::uint16_t kDefaultHttpPort = 9870;
constexpr std::uint16_t kDefaultHttpsPort = 9871;
constexpr std::uint16_t kDefaultRpcPort = 8020;
constexpr std::size_t kMaxConfFile = 4 << 20;
constexpr std::size_t kMaxExpansions = 20;  // Hadoop's own limit on ${var} substitution depth
constexpr auto kNameNodeTimeout = std::chrono::seconds(30);
// A DataNode that sends nothing for this long has stalled: the read fails
// instead of hanging the run.
constexpr auto kStallTimeout = std::chrono::seconds(30);

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return std::string(text);
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    if (std::string item = Trim(text.substr(start, comma - start)); !item.empty()) out.push_back(std::move(item));
    start = comma + 1;
  }
  return out;
}

struct Authority {
  std::string host;
  std::optional<std::uint16_t> port;
};

// "host", "host:port", "[v6]:port".
Result<Authority> ParseAuthority(std::string_view text, std::string_view url) {
  using R = Result<Authority>;
  Authority out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return R::Error(fmt::format("\"{}\": unclosed [ in the host", url));
    out.host = std::string(text.substr(1, close - 1));
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return R::Error(fmt::format("\"{}\": expected :port after the address", url));
      port = rest.substr(1);
    }
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    out.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  } else {
    out.host = std::string(text);
  }
  if (out.host.empty()) return R::Error(fmt::format("\"{}\": no host", url));
  if (text.find('@') != std::string_view::npos) {
    return R::Error(fmt::format("\"{}\": user names go in HADOOP_USER_NAME, not in the URL", url));
  }
  if (!port.empty() || text.back() == ':') {
    unsigned value = 0;
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos ||
        (value = static_cast<unsigned>(std::stoul(std::string(port)))) == 0 || value > 65535) {
      return R::Error(fmt::format("\"{}\": \"{}\" is not a port number", url, port));
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  return out;
}

struct ParsedUrl {
  std::string scheme;  // lower case
  std::string authority;
  std::string path;
};

Result<ParsedUrl> SplitUrl(std::string_view url) {
  using R = Result<ParsedUrl>;
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) return R::Error(fmt::format("\"{}\" is not a URL", url));
  ParsedUrl out;
  out.scheme = Lower(url.substr(0, sep));
  const std::string_view rest = url.substr(sep + 3);
  const auto slash = rest.find('/');
  out.authority = std::string(rest.substr(0, slash));
  out.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
  if (out.path.find_first_of("?#") != std::string::npos) {
    return R::Error(fmt::format("\"{}\": a directory URL takes no query or fragment", url));
  }
  return out;
}

// "host:port" of a Hadoop address property; 0.0.0.0 (listen everywhere)
// means the host of the URL.
std::optional<NameNode> AddressOf(const std::string& value, const std::string& fallback_host) {
  auto parsed = ParseAuthority(value, value);
  if (!parsed || !parsed->port) return std::nullopt;
  NameNode nn;
  nn.host = parsed->host == "0.0.0.0" ? fallback_host : parsed->host;
  nn.port = *parsed->port;
  return nn;
}

// Each path segment percent-encoded, the slashes kept.
std::string EncodePath(std::string_view path) {
  std::string out;
  std::size_t start = 0;
  while (start < path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) out += UrlEncode(path.substr(start, slash - start));
    if (slash < path.size()) out += '/';
    start = slash + 1;
  }
  return out.empty() ? "/" : out;
}

std::string LoginName() {
  if (const passwd* entry = ::getpwuid(::geteuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  return "nobody";
}

std::string ServerOf(const std::string& url) {
  const auto sep = url.find("://");
  const std::string rest = sep == std::string::npos ? url : url.substr(sep + 3);
  return rest.substr(0, rest.find('/'));
}

Result<FileStatus> StatusFromJson(const json& entry, const std::string& parent) {
  if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string()) {
    return Result<FileStatus>::Error("hdfs_error", "a FileStatus without a type");
  }
  FileStatus status;
  status.name = entry.value("pathSuffix", "");
  status.directory = entry["type"] == "DIRECTORY";
  if (entry.contains("length") && entry["length"].is_number_unsigned())
    status.length = entry["length"].get<std::uint64_t>();
  status.path = status.name.empty() ? parent : (parent == "/" ? "/" : parent + "/") + status.name;
  return status;
}

}  // namespace

bool IsHdfsUrl(std::string_view text) {
  const std::string lower = Lower(text.substr(0, 11));
  return lower.rfind("hdfs://", 0) == 0 || lower.rfind("webhdfs://", 0) == 0 || lower.rfind("swebhdfs://", 0) == 0;
}

HdfsEnvironment HdfsEnvironment::FromProcess() {
  HdfsEnvironment env;
  if (const char* dir = std::getenv("HADOOP_CONF_DIR"); dir != nullptr && *dir != '\0') {
    env.conf_dir = dir;
  } else if (const char* home = std::getenv("HADOOP_HOME"); home != nullptr && *home != '\0') {
    env.conf_dir = std::filesystem::path(home) / "etc" / "hadoop";
  }
  const char* user = std::getenv("HADOOP_USER_NAME");
  env.user_name = user != nullptr && *user != '\0' ? std::string(user) : LoginName();
  return env;
}

std::optional<std::string> HadoopConf::Get(std::string_view key) const {
  const auto it = properties.find(key);
  if (it == properties.end()) return std::nullopt;
  // ${name} expands to another property, as Hadoop's Configuration does (an
  // unknown name is left as it is).
  std::string value = it->second;
  for (std::size_t round = 0; round < kMaxExpansions; ++round) {
    const auto open = value.find("${");
    if (open == std::string::npos) break;
    const auto close = value.find('}', open);
    if (close == std::string::npos) break;
    const auto inner = properties.find(std::string_view(value).substr(open + 2, close - open - 2));
    if (inner == properties.end()) break;
    value.replace(open, close - open + 1, inner->second);
  }
  return Trim(value);
}

Result<std::map<std::string, std::string, std::less<>>> ParseHadoopXml(std::string_view xml, const std::string& where) {
  using R = Result<std::map<std::string, std::string, std::less<>>>;
  pugi::xml_document document;
  // No DOCTYPE processing in pugixml: no entity expansion to exploit.
  const pugi::xml_parse_result parsed = document.load_buffer(xml.data(), xml.size(), pugi::parse_default);
  if (!parsed) {
    return R::Error(fmt::format("{}: not well-formed XML at byte {}: {}", where, parsed.offset, parsed.description()));
  }
  const pugi::xml_node root = document.child("configuration");
  if (!root) return R::Error(where + ": no <configuration> element");
  std::map<std::string, std::string, std::less<>> out;
  for (const pugi::xml_node property : root.children("property")) {
    const std::string name = Trim(property.child_value("name"));
    if (name.empty()) continue;
    out[name] = property.child_value("value");
  }
  return out;
}

Result<HadoopConf> LoadHadoopConf(const std::filesystem::path& dir) {
  HadoopConf conf;
  if (dir.empty()) return conf;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Result<HadoopConf>::Error(fmt::format("HADOOP_CONF_DIR \"{}\" is not a directory", dir.string()));
  }
  conf.directory = dir;
  for (const char* name : {"core-site.xml", "hdfs-site.xml"}) {
    const auto path = dir / name;
    if (!std::filesystem::exists(path, ec)) continue;
    auto text = ReadBoundedFile(path, "", kMaxConfFile);
    if (!text) return Result<HadoopConf>::Error(text.error());
    auto properties = ParseHadoopXml(*text, path.string());
    if (!properties) return properties.failure();
    for (auto& [key, value] : *properties) conf.properties[key] = std::move(value);
  }
  return conf;
}

std::string NameNode::Address() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

Result<HdfsTarget> ResolveHdfsUrl(std::string_view url, const HadoopConf& conf) {
  using R = Result<HdfsTarget>;
  auto split = SplitUrl(url);
  if (!split) return split.failure();
  HdfsTarget target;
  target.url = std::string(url);
  std::string scheme = split->scheme;
  std::string authority = split->authority;
  target.path = split->path;
  if (authority.empty()) {
    // hdfs:///dir: the cluster of fs.defaultFS.
    auto fallback = conf.Get("fs.defaultFS");
    if (!fallback) fallback = conf.Get("fs.default.name");
    if (!fallback) {
      return R::Error(fmt::format(
          "\"{}\" names no cluster: give hdfs://host:port/dir, or set HADOOP_CONF_DIR to the directory whose "
          "core-site.xml sets fs.defaultFS{}",
          url,
          conf.directory.empty() ? " (HADOOP_CONF_DIR is not set)" : " (" + conf.directory.string() + " has none)"));
    }
    auto from_default = SplitUrl(*fallback);
    if (!from_default || !IsHdfsUrl(*fallback) || from_default->authority.empty()) {
      return R::Error(fmt::format("fs.defaultFS \"{}\" in {} is not an hdfs:// URL with a host", *fallback,
                                  conf.directory.string()));
    }
    if (scheme == "hdfs") scheme = from_default->scheme;
    authority = from_default->authority;
  }
  if (target.path.empty() || target.path.front() != '/') {
    return R::Error(fmt::format("\"{}\" names no directory (hdfs://host:port/dir)", url));
  }
  while (target.path.size() > 1 && target.path.back() == '/') target.path.pop_back();
  auto parsed = ParseAuthority(authority, url);
  if (!parsed) return parsed.failure();
  const std::string& host = parsed->host;
  const std::string policy = conf.Get("dfs.http.policy").value_or("HTTP_ONLY");
  target.tls = scheme == "swebhdfs" || (scheme == "hdfs" && policy == "HTTPS_ONLY");
  target.kerberos = Lower(conf.Get("hadoop.security.authentication").value_or("simple")) == "kerberos";
  const std::string address_key = target.tls ? "dfs.namenode.https-address" : "dfs.namenode.http-address";
  const std::uint16_t default_web_port = target.tls ? kDefaultHttpsPort : kDefaultHttpPort;

  if (scheme == "webhdfs" || scheme == "swebhdfs") {
    // Hadoop's webhdfs:// names the NameNode's web address itself.
    target.namenodes.push_back({"", host, parsed->port.value_or(default_web_port)});
    return target;
  }
  const auto nameservices = SplitList(conf.Get("dfs.nameservices").value_or(""));
  const auto ha_ids = conf.Get("dfs.ha.namenodes." + host);
  const bool is_nameservice =
      !parsed->port && (ha_ids || std::find(nameservices.begin(), nameservices.end(), host) != nameservices.end());
  if (is_nameservice) {
    const auto ids = SplitList(ha_ids.value_or(""));
    if (ids.empty()) {
      return R::Error(fmt::format("\"{}\": name service {} has no NameNodes: dfs.ha.namenodes.{} is not set in {}", url,
                                  host, host, conf.directory.string()));
    }
    target.nameservice = host;
    for (const auto& id : ids) {
      const std::string key = fmt::format("{}.{}.{}", address_key, host, id);
      const auto value = conf.Get(key);
      const auto address = value ? AddressOf(*value, host) : std::nullopt;
      if (!address) {
        return R::Error(fmt::format("\"{}\": NameNode {} of {} has no web address: {} is {} in {}", url, id, host, key,
                                    value ? "not host:port" : "not set", conf.directory.string()));
      }
      target.namenodes.push_back({id, address->host, address->port});
    }
    return target;
  }
  // hdfs://host:port: the port is the NameNode's RPC port. The web address
  // configured beside a matching rpc-address wins; else the same host on the
  // configured (or Hadoop's default) web port.
  const std::string rpc = NameNode{"", host, parsed->port.value_or(kDefaultRpcPort)}.Address();
  constexpr std::string_view kRpcKey = "dfs.namenode.rpc-address";
  for (const auto& [key, value] : conf.properties) {
    if (key.rfind(kRpcKey, 0) != 0 || Trim(value) != rpc) continue;
    const std::string suffix = key.substr(kRpcKey.size());  // "" or ".ns.nn"
    if (const auto web = conf.Get(address_key + suffix)) {
      if (const auto address = AddressOf(*web, host)) {
        target.namenodes.push_back({"", address->host, address->port});
        return target;
      }
    }
  }
  std::uint16_t port = default_web_port;
  if (const auto web = conf.Get(address_key)) {
    if (const auto address = AddressOf(*web, host)) port = address->port;
  }
  target.namenodes.push_back({"", host, port});
  return target;
}

Failure RemoteFailure(const std::string& server, int status, std::string_view body) {
  const json parsed = JsonDepthError(body).empty() ? json::parse(body, nullptr, false) : json();
  if (parsed.is_object() && parsed.contains("RemoteException") && parsed["RemoteException"].is_object()) {
    const json& remote = parsed["RemoteException"];
    const std::string exception = remote.value("exception", "RemoteException");
    const std::string message = remote.value("message", "");
    std::string reason = "hdfs_error";
    if (exception == "FileNotFoundException") reason = "bad_directory";
    if (exception == "AccessControlException" || exception == "SecurityException") reason = "permission_denied";
    if (exception == "StandbyException") reason = "hdfs_standby";
    if (exception == "AuthenticationException") reason = "hdfs_auth";
    return {reason, fmt::format("{} answered {} {}: {}", server, status, exception, message)};
  }
  std::string excerpt(body.substr(0, 200));
  std::replace_if(
      excerpt.begin(), excerpt.end(), [](unsigned char c) { return c < 0x20; }, ' ');
  const std::string reason = status == 401 ? "hdfs_auth" : status == 404 ? "bad_directory" : "hdfs_error";
  return {reason, fmt::format("{} answered HTTP {}{}{}", server, status, excerpt.empty() ? "" : ": ", excerpt)};
}

std::string WithRange(const std::string& location, std::uint64_t offset, std::uint64_t length,
                      std::uint64_t buffer_size) {
  const auto question = location.find('?');
  std::string base = location.substr(0, question);
  std::string query;
  if (question != std::string::npos) {
    std::size_t start = question + 1;
    while (start <= location.size()) {
      const std::size_t amp = std::min(location.find('&', start), location.size());
      const std::string item = location.substr(start, amp - start);
      const std::string name = Lower(item.substr(0, item.find('=')));
      if (!item.empty() && name != "offset" && name != "length" && name != "buffersize") {
        query += (query.empty() ? "" : "&") + item;
      }
      start = amp + 1;
    }
  }
  query += fmt::format("{}offset={}", query.empty() ? "" : "&", offset);
  if (length > 0) query += fmt::format("&length={}", length);
  if (buffer_size > 0) query += fmt::format("&buffersize={}", buffer_size);
  return base + "?" + query;
}

Result<std::unique_ptr<WebHdfsClient>> WebHdfsClient::Create(HdfsTarget target, const HdfsEnvironment& env) {
  using R = Result<std::unique_ptr<WebHdfsClient>>;
  if (target.namenodes.empty()) return R::Error("no NameNode to ask");
  HttpClientSettings settings;
  settings.ca_file = env.ca_file;
  auto simple = HttpClient::Create(settings);
  if (!simple) return R::Error(simple.error());
  settings.negotiate = true;
  auto negotiate = HttpClient::Create(settings);
  if (!negotiate) return R::Error(negotiate.error());
  const bool kerberos = target.kerberos;
  std::unique_ptr<WebHdfsClient> client(
      new WebHdfsClient(std::move(target), env.user_name, std::move(simple).value(), std::move(negotiate).value()));
  client->use_negotiate_ = kerberos;
  return client;
}

std::string WebHdfsClient::ActiveNameNode() const {
  std::lock_guard lock(mutex_);
  return target_.namenodes[active_].Address();
}

Result<HttpReply> WebHdfsClient::NameNodeRequest(const std::string& path, const std::string& op,
                                                 const std::string& extra_query) const {
  std::size_t start = 0;
  bool negotiate = false;
  {
    std::lock_guard lock(mutex_);
    start = active_;
    negotiate = use_negotiate_;
  }
  const std::size_t count = target_.namenodes.size();
  std::vector<std::string> passed_over;
  bool any_standby = false;
  for (std::size_t k = 0; k < count; ++k) {
    const std::size_t index = (start + k) % count;
    const NameNode& nn = target_.namenodes[index];
    const std::string name = nn.id.empty() ? nn.Address() : fmt::format("{} ({})", nn.id, nn.Address());
    for (int attempt = 0; attempt < 2; ++attempt) {
      HttpRequest request;
      request.url = HttpOrigin(target_.tls, nn.host, nn.port) + "/webhdfs/v1" + EncodePath(path) + "?op=" + op;
      // Simple auth names the user; under SPNEGO the ticket does.
      if (!negotiate) request.url += "&user.name=" + UrlEncode(user_);
      request.url += extra_query;
      request.timeout = kNameNodeTimeout;
      auto reply = ClientFor(negotiate).Send(request);
      if (!reply) {
        passed_over.push_back(name + ": " + reply.error());
        break;
      }
      if (reply->status == 401) {
        // A Kerberized NameNode asks for SPNEGO: try once with the ticket cache.
        if (!negotiate && Lower(reply->Header("www-authenticate")).find("negotiate") != std::string::npos) {
          negotiate = true;
          std::lock_guard lock(mutex_);
          use_negotiate_ = true;
          continue;
        }
        return Failure{
            "hdfs_auth",
            fmt::format("NameNode {} refused the request (HTTP 401{}): {}", name, negotiate ? ", SPNEGO" : "",
                        negotiate ? "no Kerberos ticket it accepts; kinit as " + user_ + " first"
                                  : "it asks for " + reply->Header("www-authenticate"))};
      }
      if (reply->status == 403 && reply->body.find("StandbyException") != std::string::npos) {
        passed_over.push_back(name + " is standby");
        any_standby = true;
        break;
      }
      std::lock_guard lock(mutex_);
      active_ = index;
      return reply;
    }
  }
  std::string joined;
  for (const auto& item : passed_over) joined += (joined.empty() ? "" : "; ") + item;
  const std::string cluster = target_.nameservice.empty() ? "" : " of name service " + target_.nameservice;
  return Failure{any_standby ? "hdfs_standby" : "hdfs_unreachable",
                 fmt::format("no active NameNode{} answered: {}", cluster, joined)};
}

Result<FileStatus> WebHdfsClient::GetFileStatus(const std::string& path) const {
  auto reply = NameNodeRequest(path, "GETFILESTATUS", "");
  if (!reply) return reply.failure();
  if (reply->status != 200) return RemoteFailure(ServerOf(reply->url), reply->status, reply->body);
  const json parsed = JsonDepthError(reply->body).empty() ? json::parse(reply->body, nullptr, false) : json();
  if (!parsed.is_object() || !parsed.contains("FileStatus")) {
    return Failure{"hdfs_error", ServerOf(reply->url) + ": GETFILESTATUS answered without a FileStatus"};
  }
  return StatusFromJson(parsed["FileStatus"], path);
}

Result<std::vector<FileStatus>> WebHdfsClient::ListStatus(const std::string& path) const {
  using R = Result<std::vector<FileStatus>>;
  auto reply = NameNodeRequest(path, "LISTSTATUS", "");
  if (!reply) return reply.failure();
  if (reply->status != 200) return RemoteFailure(ServerOf(reply->url), reply->status, reply->body);
  const json parsed = JsonDepthError(reply->body).empty() ? json::parse(reply->body, nullptr, false) : json();
  const json* list = nullptr;
  if (parsed.is_object() && parsed.contains("FileStatuses") && parsed["FileStatuses"].is_object() &&
      parsed["FileStatuses"].contains("FileStatus") && parsed["FileStatuses"]["FileStatus"].is_array()) {
    list = &parsed["FileStatuses"]["FileStatus"];
  }
  if (list == nullptr)
    return R::Error("hdfs_error", ServerOf(reply->url) + ": LISTSTATUS answered without FileStatuses");
  std::vector<FileStatus> out;
  for (const json& entry : *list) {
    auto status = StatusFromJson(entry, path);
    if (!status) return status.failure();
    out.push_back(std::move(status).value());
  }
  return out;
}

Result<std::string> WebHdfsClient::OpenLocation(const std::string& path) const {
  using R = Result<std::string>;
  // noredirect=true (Hadoop 2.8 and later) answers the DataNode's URL in
  // JSON; older NameNodes answer the 307 itself.
  auto reply = NameNodeRequest(path, "OPEN", "&noredirect=true");
  if (!reply) return reply.failure();
  const std::string server = ServerOf(reply->url);
  if (reply->status == 307 || reply->status == 302) {
    std::string location = reply->Header("location");
    if (location.empty()) return R::Error("hdfs_error", server + ": OPEN redirected without a Location");
    return location;
  }
  if (reply->status != 200) return RemoteFailure(server, reply->status, reply->body);
  const json parsed = JsonDepthError(reply->body).empty() ? json::parse(reply->body, nullptr, false) : json();
  if (!parsed.is_object() || !parsed.contains("Location") || !parsed["Location"].is_string()) {
    return R::Error("hdfs_error", server + ": OPEN answered neither a redirect nor a Location");
  }
  return parsed["Location"].get<std::string>();
}

Result<void> WebHdfsClient::Read(const std::string& location, std::uint64_t offset, std::uint64_t length,
                                 std::uint64_t buffer_size,
                                 const std::function<bool(std::string_view)>& on_data) const {
  HttpRequest request;
  request.url = WithRange(location, offset, length, buffer_size);
  // The whole transfer may take as long as the test; a stalled one ends
  // through stall_timeout, a stopped one through on_data.
  request.timeout = std::chrono::hours(24);
  request.stall_timeout = kStallTimeout;
  request.on_body = on_data;
  bool negotiate = false;
  {
    std::lock_guard lock(mutex_);
    negotiate = use_negotiate_;
  }
  auto reply = ClientFor(negotiate).Send(request);
  const std::string server = ServerOf(request.url);
  if (!reply) {
    if (reply.reason() == "aborted") return {};
    return Failure{"hdfs_unreachable", "reading from DataNode " + server + ": " + reply.error()};
  }
  if (reply->status != 200 && reply->status != 206) return RemoteFailure(server, reply->status, reply->body);
  return {};
}

}  // namespace hostperf::probes::disk::hdfs

namespace hostperf::probes::disk::hdfs {

using SteadyClock = std::chrono::steady_clock;

HdfsReadWorkload::HdfsReadWorkload(const WebHdfsClient& client, std::vector<FileStatus> files, std::size_t threads,
                                   std::uint64_t block_size)
    : client_(client),
      files_(std::move(files)),
      threads_(std::max<std::size_t>(threads, 1)),
      block_size_(std::max<std::uint64_t>(block_size, 1)),
      locations_(files_.size()),
      next_block_(files_.size(), 0) {}

Result<std::string> HdfsReadWorkload::Location(std::size_t file) {
  if (locations_[file].empty()) {
    auto location = client_.OpenLocation(files_[file].path);
    if (!location) return location;
    locations_[file] = std::move(location).value();
  }
  return locations_[file];
}

Result<void> HdfsReadWorkload::Run(DiskTest test, SteadyClock::time_point until, const std::atomic<bool>& stop,
                                   TestCounters& counters, OpLatencies& latencies, const std::function<void()>& tick) {
  if (test != DiskTest::kRead && test != DiskTest::kSkipRead) {
    return Failure{"bad_options", std::string(TestName(test)) + " does not run on HDFS (vioperf reads only)"};
  }
  if (files_.size() < threads_) {
    return Failure{"bad_options", fmt::format("{} files for {} threads", files_.size(), threads_)};
  }
  const DiskOp op = test == DiskTest::kRead ? DiskOp::kRead : DiskOp::kSkipRead;
  std::vector<LatencyHistogram> local(threads_);
  auto result = RunWorkers(threads_, stop, tick, [&](std::size_t t, const std::atomic<bool>& abort) {
    return test == DiskTest::kRead ? ReadWorker(t, until, abort, counters, local[t])
                                   : SkipReadWorker(t, until, abort, counters, local[t]);
  });
  for (const auto& histogram : local) latencies[static_cast<std::size_t>(op)].Merge(histogram);
  return result;
}

Result<void> HdfsReadWorkload::ReadWorker(std::size_t thread, SteadyClock::time_point until,
                                          const std::atomic<bool>& stop, TestCounters& counters,
                                          LatencyHistogram& latency) {
  bool got_block = false;
  for (std::size_t file = thread;; file += threads_) {
    if (file >= files_.size()) file = thread;  // the next pass over this thread's files
    auto location = Location(file);
    if (!location) return location.failure();
    std::uint64_t pending = 0;
    auto last = SteadyClock::now();
    bool stopped = false;
    // A block is counted (an op, a latency) each time another block's worth
    // has arrived: the stream is one request, its blocks are what vioperf's
    // reader asks for one at a time.
    auto read = client_.Read(*location, 0, 0, block_size_, [&](std::string_view data) {
      counters.bytes_read.fetch_add(data.size(), std::memory_order_relaxed);
      pending += data.size();
      const auto now = SteadyClock::now();
      while (pending >= block_size_) {
        pending -= block_size_;
        counters.ops.fetch_add(1, std::memory_order_relaxed);
        latency.Observe(std::chrono::duration<double>(now - last).count());
        last = now;
        got_block = true;
      }
      stopped = stop.load(std::memory_order_relaxed) || (got_block && now >= until);
      return !stopped;
    });
    if (!read) return read;
    // An empty file cannot hold a run past its end.
    const bool ended = SteadyClock::now() >= until && (got_block || files_[file].length == 0);
    if (stopped || stop.load() || ended) return {};
  }
}

Result<void> HdfsReadWorkload::SkipReadWorker(std::size_t thread, SteadyClock::time_point until,
                                              const std::atomic<bool>& stop, TestCounters& counters,
                                              LatencyHistogram& latency) {
  for (std::size_t file = thread;; file += threads_) {
    if (file >= files_.size()) file = thread;
    auto location = Location(file);
    if (!location) return location.failure();
    const std::uint64_t length = files_[file].length;
    const std::uint64_t blocks = (length + block_size_ - 1) / block_size_;
    // Read one block, skip one, to the end of the file; the next pass over
    // it reads the blocks this one skipped.
    std::size_t& index = next_block_[file];
    while (index < blocks) {
      const std::uint64_t offset = index * block_size_;
      const std::uint64_t size = std::min(block_size_, length - offset);
      const auto began = SteadyClock::now();
      auto read = client_.Read(*location, offset, size, block_size_, [&](std::string_view data) {
        counters.bytes_read.fetch_add(data.size(), std::memory_order_relaxed);
        return !stop.load(std::memory_order_relaxed);
      });
      if (!read) return read;
      counters.ops.fetch_add(1, std::memory_order_relaxed);
      const auto now = SteadyClock::now();
      latency.Observe(std::chrono::duration<double>(now - began).count());
      index += 2;
      if (stop.load() || now >= until) return {};
    }
    index = index % 2 == 0 ? 1 : 0;
    if (blocks == 0 && SteadyClock::now() >= until) return {};
  }
}

}  // namespace hostperf::probes::disk::hdfs
