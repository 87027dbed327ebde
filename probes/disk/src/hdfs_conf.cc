#include <arpa/inet.h>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <pugixml.hpp>

#include "hdfs_text.h"
#include "hostperf/base/files.h"
#include "hostperf/probes/disk/hdfs.h"

// Hadoop's configuration (core-site.xml, hdfs-site.xml) and the resolution
// of an HDFS directory URL to the NameNodes that serve it.
namespace hostperf::probes::disk::hdfs {
namespace {

template <typename T>
using R = Result<T>;

// Hadoop 3's NameNode web ports (dfs.namenode.http-address, https-address)
// and its RPC port (fs.defaultFS without a port).
constexpr std::uint16_t kDefaultHttpPort = 9870;
constexpr std::uint16_t kDefaultHttpsPort = 9871;
constexpr std::uint16_t kDefaultRpcPort = 8020;
constexpr std::size_t kMaxConfFile = 4 << 20;
constexpr std::size_t kMaxExpansions = 20;  // Hadoop's own limit on ${var} substitution depth

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

bool IsAddressLiteral(const std::string& host) {
  unsigned char buffer[16];
  return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 || ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

bool IsLoopback(const std::string& host) {
  const std::string lower = Lower(host);
  return lower == "localhost" || lower == "::1" || (lower.rfind("127.", 0) == 0 && IsAddressLiteral(lower));
}

// The hosts the Hadoop configuration names as NameNodes or name services.
std::vector<std::string> ConfiguredNameNodeHosts(const HadoopConf& conf) {
  std::vector<std::string> out;
  for (const char* key : {"fs.defaultFS", "fs.default.name"}) {
    const auto value = conf.Get(key);
    if (!value) continue;
    const auto split = SplitUrl(*value);
    if (!split) continue;
    if (auto parsed = ParseAuthority(split->authority, *value)) out.push_back(Lower(parsed->host));
  }
  for (const auto& name : SplitList(conf.Get("dfs.nameservices").value_or(""))) out.push_back(Lower(name));
  for (const auto& [key, raw] : conf.properties) {
    const bool address = key.rfind("dfs.namenode.rpc-address", 0) == 0 ||
                         key.rfind("dfs.namenode.http-address", 0) == 0 ||
                         key.rfind("dfs.namenode.https-address", 0) == 0;
    if (!address) continue;
    const auto value = conf.Get(key);
    if (auto parsed = value ? ParseAuthority(*value, *value) : R<Authority>::Error("")) {
      if (parsed->host != "0.0.0.0") out.push_back(Lower(parsed->host));
    }
  }
  return out;
}

std::string LoginName() {
  if (const passwd* entry = ::getpwuid(::geteuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  return "nobody";
}

// hdfs:///dir: the cluster (and, for hdfs://, the scheme) of fs.defaultFS.
// A URL that names its cluster is returned as it is.
Result<ParsedUrl> WithCluster(ParsedUrl split, std::string_view url, const HadoopConf& conf) {
  using R = Result<ParsedUrl>;
  if (!split.authority.empty()) return split;
  auto fallback = conf.Get("fs.defaultFS");
  if (!fallback) fallback = conf.Get("fs.default.name");
  if (!fallback) {
    return R::Error(fmt::format(
        "\"{}\" names no cluster: give hdfs://host:port/dir, or set HADOOP_CONF_DIR to the directory whose "
        "core-site.xml sets fs.defaultFS{}",
        url, conf.directory.empty() ? " (HADOOP_CONF_DIR is not set)" : " (" + conf.directory.string() + " has none)"));
  }
  auto from_default = SplitUrl(*fallback);
  if (!from_default || !IsHdfsUrl(*fallback) || from_default->authority.empty()) {
    return R::Error(
        fmt::format("fs.defaultFS \"{}\" in {} is not an hdfs:// URL with a host", *fallback, conf.directory.string()));
  }
  if (split.scheme == "hdfs") split.scheme = from_default->scheme;
  split.authority = from_default->authority;
  return split;
}

// The NameNodes of an HA name service: dfs.ha.namenodes.<ns> (`ids`), each
// at its web address (`address_key`.<ns>.<id>).
Result<std::vector<NameNode>> NameServiceNodes(std::string_view url, const std::string& nameservice,
                                               const std::vector<std::string>& ids, const std::string& address_key,
                                               const HadoopConf& conf) {
  using R = Result<std::vector<NameNode>>;
  if (ids.empty()) {
    return R::Error(fmt::format("\"{}\": name service {} has no NameNodes: dfs.ha.namenodes.{} is not set in {}", url,
                                nameservice, nameservice, conf.directory.string()));
  }
  std::vector<NameNode> out;
  for (const auto& id : ids) {
    const std::string key = fmt::format("{}.{}.{}", address_key, nameservice, id);
    const auto value = conf.Get(key);
    const auto address = value ? AddressOf(*value, nameservice) : std::nullopt;
    if (!address) {
      return R::Error(fmt::format("\"{}\": NameNode {} of {} has no web address: {} is {} in {}", url, id, nameservice,
                                  key, value ? "not host:port" : "not set", conf.directory.string()));
    }
    out.push_back({id, address->host, address->port});
  }
  return out;
}

// hdfs://host:port: the port is the NameNode's RPC port. The web address
// configured beside a matching rpc-address wins; else the same host on the
// configured (or Hadoop's default) web port.
NameNode RpcNameNode(const Authority& authority, const std::string& address_key, std::uint16_t default_web_port,
                     const HadoopConf& conf) {
  const std::string& host = authority.host;
  const std::string rpc = NameNode{"", host, authority.port.value_or(kDefaultRpcPort)}.Address();
  constexpr std::string_view kRpcKey = "dfs.namenode.rpc-address";
  for (const auto& [key, value] : conf.properties) {
    if (key.rfind(kRpcKey, 0) != 0 || Trim(value) != rpc) continue;
    const std::string suffix = key.substr(kRpcKey.size());  // "" or ".ns.nn"
    if (const auto web = conf.Get(address_key + suffix)) {
      if (const auto address = AddressOf(*web, host)) return {"", address->host, address->port};
    }
  }
  std::uint16_t port = default_web_port;
  if (const auto web = conf.Get(address_key)) {
    if (const auto address = AddressOf(*web, host)) port = address->port;
  }
  return {"", host, port};
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
  auto cluster = WithCluster(std::move(split).value(), url, conf);
  if (!cluster) return cluster.failure();
  const std::string& scheme = cluster->scheme;
  HdfsTarget target;
  target.url = std::string(url);
  target.path = cluster->path;
  if (target.path.empty() || target.path.front() != '/') {
    return R::Error(fmt::format("\"{}\" names no directory (hdfs://host:port/dir)", url));
  }
  while (target.path.size() > 1 && target.path.back() == '/') target.path.pop_back();
  auto parsed = ParseAuthority(cluster->authority, url);
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
    auto nodes = NameServiceNodes(url, host, SplitList(ha_ids.value_or("")), address_key, conf);
    if (!nodes) return nodes.failure();
    target.nameservice = host;
    target.namenodes = std::move(nodes).value();
    return target;
  }
  target.namenodes.push_back(RpcNameNode(*parsed, address_key, default_web_port, conf));
  return target;
}

std::string ClusterEntryError(const std::string& entry) {
  if (entry.find_first_of("/@ ") != std::string::npos) return "expected a NameNode \"host\" or \"host:port\"";
  auto parsed = ParseAuthority(entry, entry);
  return parsed ? "" : parsed.error() + " (expected a NameNode \"host\" or \"host:port\")";
}

Result<void> CheckConfiguredCluster(const HdfsTarget& target, const HadoopConf& conf,
                                    const std::vector<std::string>& clusters) {
  // A name service resolves from the Hadoop configuration alone.
  if (!target.nameservice.empty()) return {};
  const auto configured = ConfiguredNameNodeHosts(conf);
  for (const NameNode& nn : target.namenodes) {
    const std::string host = Lower(nn.host);
    bool allowed = std::find(configured.begin(), configured.end(), host) != configured.end();
    for (const auto& entry : clusters) {
      if (allowed) break;
      auto parsed = ParseAuthority(entry, entry);
      allowed = parsed && Lower(parsed->host) == host && (!parsed->port || *parsed->port == nn.port);
    }
    if (!allowed) {
      return Result<void>::Error(
          "bad_options",
          fmt::format("\"{}\": NameNode {} is not a cluster of this host's configuration (HADOOP_CONF_DIR's "
                      "NameNode addresses, or [probes.disk] hdfs_clusters)",
                      target.url.substr(0, 200), nn.Address()));
    }
  }
  return {};
}

Result<void> CheckDataNodeLocation(const HdfsTarget& target, std::string_view location) {
  const std::string shown = CleanRemoteText(location);
  const auto refuse = [&](const std::string& why) {
    return Result<void>::Error("hdfs_error", fmt::format("DataNode location \"{}\" refused: {}", shown, why));
  };
  const auto sep = location.find("://");
  if (sep == std::string_view::npos) return refuse("not a URL");
  const std::string scheme = Lower(location.substr(0, sep));
  if (scheme != (target.tls ? "https" : "http")) return refuse("not " + std::string(target.tls ? "https" : "http"));
  const std::string_view rest = location.substr(sep + 3);
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || rest.substr(slash).rfind("/webhdfs/v1/", 0) != 0) {
    return refuse("not a /webhdfs/v1/ path");
  }
  auto authority = ParseAuthority(rest.substr(0, slash), shown);
  if (!authority) return refuse(CleanRemoteText(authority.error()));
  const std::string host = Lower(authority->host);
  for (const NameNode& nn : target.namenodes) {
    const std::string nn_host = Lower(nn.host);
    if (host == nn_host) return {};
    if (IsLoopback(host) && IsLoopback(nn_host)) return {};
    const auto dot = nn_host.find('.');
    if (IsAddressLiteral(nn_host) || dot == std::string::npos) continue;
    const std::string domain = nn_host.substr(dot);  // ".hadoop.example.com"
    if (domain.find('.', 1) == std::string::npos) continue;
    if (host.size() > domain.size() && host.compare(host.size() - domain.size(), domain.size(), domain) == 0) {
      return {};
    }
  }
  for (const auto& entry : target.datanode_hosts) {
    const std::string allowed = Lower(entry);
    if (host == allowed) return {};
    if (allowed.size() > 1 && allowed.front() == '.' && host.size() > allowed.size() &&
        host.compare(host.size() - allowed.size(), allowed.size(), allowed) == 0) {
      return {};
    }
  }
  return refuse("host " + CleanRemoteText(host) +
                " is not a NameNode's host or in its domain, nor in [probes.disk] hdfs_datanodes");
}

}  // namespace hostperf::probes::disk::hdfs
