#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hdfs_text.h"
#include "hostperf/base/files.h"
#include "hostperf/probes/disk/hdfs.h"

// The WebHDFS protocol: NameNode requests with fail-over and SPNEGO, file
// listings, DataNode reads, and the cluster's errors as probe failures.
namespace hostperf::probes::disk::hdfs {
namespace {

using nlohmann::json;

constexpr auto kNameNodeTimeout = std::chrono::seconds(30);
// A DataNode that sends nothing for this long has stalled: the read fails
// instead of hanging the run.
constexpr auto kStallTimeout = std::chrono::seconds(30);

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

std::string CleanRemoteText(std::string_view text) {
  std::string out(text.substr(0, kMaxRemoteText));
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte == '\t' || byte == '\n' || byte == '\r') {
      c = ' ';
    } else if (byte < 0x20 || byte >= 0x7f) {
      c = '?';
    }
  }
  return out;
}

Failure RemoteFailure(const std::string& server, int status, std::string_view body) {
  const json parsed = JsonDepthError(body).empty() ? json::parse(body, nullptr, false) : json();
  if (parsed.is_object() && parsed.contains("RemoteException") && parsed["RemoteException"].is_object()) {
    const json& remote = parsed["RemoteException"];
    const json& exception_field = remote.contains("exception") ? remote["exception"] : json();
    const json& message_field = remote.contains("message") ? remote["message"] : json();
    const std::string exception = exception_field.is_string() ? exception_field.get<std::string>() : "RemoteException";
    const std::string message = message_field.is_string() ? message_field.get<std::string>() : "";
    std::string reason = "hdfs_error";
    if (exception == "FileNotFoundException") reason = "bad_directory";
    if (exception == "AccessControlException" || exception == "SecurityException") reason = "permission_denied";
    if (exception == "StandbyException") reason = "hdfs_standby";
    if (exception == "AuthenticationException") reason = "hdfs_auth";
    return {reason, fmt::format("{} answered {} {}: {}", CleanRemoteText(server), status, CleanRemoteText(exception),
                                CleanRemoteText(message))};
  }
  const std::string excerpt = CleanRemoteText(body);
  const std::string reason = status == 401 ? "hdfs_auth" : status == 404 ? "bad_directory" : "hdfs_error";
  return {reason, fmt::format("{} answered HTTP {}{}{}", CleanRemoteText(server), status, excerpt.empty() ? "" : ": ",
                              excerpt)};
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
                                  : "it asks for " + CleanRemoteText(reply->Header("www-authenticate")))};
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
    if (auto confined = CheckDataNodeLocation(target_, location); !confined) return confined.failure();
    return location;
  }
  if (reply->status != 200) return RemoteFailure(server, reply->status, reply->body);
  const json parsed = JsonDepthError(reply->body).empty() ? json::parse(reply->body, nullptr, false) : json();
  if (!parsed.is_object() || !parsed.contains("Location") || !parsed["Location"].is_string()) {
    return R::Error("hdfs_error", server + ": OPEN answered neither a redirect nor a Location");
  }
  std::string location = parsed["Location"].get<std::string>();
  if (auto confined = CheckDataNodeLocation(target_, location); !confined) return confined.failure();
  return location;
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
