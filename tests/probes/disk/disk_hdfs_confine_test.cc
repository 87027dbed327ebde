// The WebHDFS client against a hostile NameNode (a fake server on a port of
// 0): DataNode redirects leave the cluster only by configuration, run-API
// URLs name configured clusters only, and remote error text lands in run
// records bounded and clean.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::disk::hdfs {
namespace {

// Answers every connection with one canned HTTP response.
class FakeNameNode {
 public:
  explicit FakeNameNode(std::string response) : response_(std::move(response)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeNameNode() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_; }

 private:
  void Serve() {
    while (!stop_) {
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      ++connections_;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(client, buffer, sizeof(buffer));
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      std::size_t sent = 0;
      while (sent < response_.size()) {
        const ssize_t n = ::send(client, response_.data() + sent, response_.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      ::close(client);
    }
  }

  std::string response_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

std::string Response(const std::string& status, const std::string& body, const std::string& extra = "") {
  return "HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nConnection: close\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::unique_ptr<WebHdfsClient> ClientOf(const FakeNameNode& server, std::vector<std::string> datanodes = {}) {
  HdfsTarget target;
  target.url = "webhdfs://127.0.0.1:" + std::to_string(server.port()) + "/user/data";
  target.path = "/user/data";
  target.namenodes.push_back({"", "127.0.0.1", server.port()});
  target.datanode_hosts = std::move(datanodes);
  HdfsEnvironment env;
  env.user_name = "alice";
  auto client = WebHdfsClient::Create(std::move(target), env);
  EXPECT_TRUE(client.ok());
  return std::move(client).value();
}

TEST(WebHdfsConfineTest, RedirectToAnotherHostIsRefused) {
  // noredirect's JSON naming a host outside the cluster.
  FakeNameNode json_redirect(
      Response("200 OK", R"({"Location":"http://10.20.30.40:9864/webhdfs/v1/user/data/f?op=OPEN"})"));
  const auto refused = ClientOf(json_redirect)->OpenLocation("/user/data/f");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.reason(), "hdfs_error");
  EXPECT_NE(refused.error().find("10.20.30.40"), std::string::npos) << refused.error();
  // An older NameNode's 307 to a metadata service.
  FakeNameNode redirect(
      Response("307 Temporary Redirect", "", "Location: http://metadata.internal/webhdfs/v1/latest/meta-data\r\n"));
  EXPECT_FALSE(ClientOf(redirect)->OpenLocation("/user/data/f").ok());
  // The same host, but not a WebHDFS path.
  FakeNameNode other_path(Response("200 OK", R"({"Location":"http://127.0.0.1:9864/admin?x=1"})"));
  EXPECT_FALSE(ClientOf(other_path)->OpenLocation("/user/data/f").ok());
  // A user name smuggled into the authority.
  FakeNameNode userinfo(Response("200 OK", R"({"Location":"http://127.0.0.1@10.0.0.1:9864/webhdfs/v1/f"})"));
  EXPECT_FALSE(ClientOf(userinfo)->OpenLocation("/user/data/f").ok());
  // The NameNode's own host, and a configured DataNode host, are followed.
  FakeNameNode same(Response("200 OK", R"({"Location":"http://127.0.0.1:9864/webhdfs/v1/user/data/f?op=OPEN"})"));
  EXPECT_TRUE(ClientOf(same)->OpenLocation("/user/data/f").ok());
  EXPECT_TRUE(ClientOf(json_redirect, {"10.20.30.40"})->OpenLocation("/user/data/f").ok());
}

TEST(WebHdfsConfineTest, DataNodesInTheNameNodesDomainAreFollowed) {
  HdfsTarget target;
  target.namenodes.push_back({"", "nn1.hadoop.example.com", 9870});
  EXPECT_TRUE(CheckDataNodeLocation(target, "http://dn7.hadoop.example.com:9864/webhdfs/v1/f").ok());
  EXPECT_TRUE(CheckDataNodeLocation(target, "http://NN1.hadoop.example.com:9864/webhdfs/v1/f").ok());
  EXPECT_FALSE(CheckDataNodeLocation(target, "http://mail.example.com/webhdfs/v1/f").ok());
  EXPECT_FALSE(CheckDataNodeLocation(target, "http://evilhadoop.example.com/webhdfs/v1/f").ok());
  EXPECT_FALSE(CheckDataNodeLocation(target, "https://dn7.hadoop.example.com/webhdfs/v1/f").ok());
  EXPECT_FALSE(CheckDataNodeLocation(target, "file:///etc/passwd").ok());
  // The refusal quotes the location bounded and printable.
  const auto hostile = CheckDataNodeLocation(target, "http://\x1b]0;x\x07evil/webhdfs/v1/" + std::string(4096, 'p'));
  ASSERT_FALSE(hostile.ok());
  EXPECT_LT(hostile.error().size(), 3 * kMaxRemoteText);
  EXPECT_EQ(hostile.error().find('\x1b'), std::string::npos) << hostile.error();
  // A two-label NameNode name has no domain to share.
  target.namenodes = {{"", "nn.example", 9870}};
  EXPECT_FALSE(CheckDataNodeLocation(target, "http://other.example/webhdfs/v1/f").ok());
  target.datanode_hosts = {".dn.example"};
  EXPECT_TRUE(CheckDataNodeLocation(target, "http://a.dn.example/webhdfs/v1/f").ok());
  EXPECT_FALSE(CheckDataNodeLocation(target, "http://dn.example.evil/webhdfs/v1/f").ok());
}

TEST(WebHdfsConfineTest, RunApiUrlToAnUnconfiguredHostIsRefused) {
  HadoopConf none;
  auto target = ResolveHdfsUrl("webhdfs://10.9.9.9:50070/x", none);
  ASSERT_TRUE(target.ok());
  const auto refused = CheckConfiguredCluster(*target, none, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.reason(), "bad_options");
  EXPECT_NE(refused.error().find("hdfs_clusters"), std::string::npos) << refused.error();
  EXPECT_TRUE(CheckConfiguredCluster(*target, none, {"10.9.9.9:50070"}).ok());
  EXPECT_TRUE(CheckConfiguredCluster(*target, none, {"10.9.9.9"}).ok());
  EXPECT_FALSE(CheckConfiguredCluster(*target, none, {"10.9.9.9:9870"}).ok());
  EXPECT_FALSE(CheckConfiguredCluster(*target, none, {"10.9.9.99"}).ok());
  // The Hadoop configuration's own NameNodes and name services are configured.
  HadoopConf conf;
  conf.properties = {{"fs.defaultFS", "hdfs://prod"},
                     {"dfs.nameservices", "prod"},
                     {"dfs.ha.namenodes.prod", "nn1"},
                     {"dfs.namenode.rpc-address.prod.nn1", "nn-a.example:8020"},
                     {"dfs.namenode.http-address.prod.nn1", "nn-a.example:9870"}};
  for (const char* url :
       {"hdfs:///data", "hdfs://prod/data", "hdfs://nn-a.example:8020/data", "webhdfs://nn-a.example:9870/data"}) {
    auto resolved = ResolveHdfsUrl(url, conf);
    ASSERT_TRUE(resolved.ok()) << url << ": " << resolved.error();
    EXPECT_TRUE(CheckConfiguredCluster(*resolved, conf, {}).ok()) << url;
  }
  EXPECT_FALSE(CheckConfiguredCluster(*ResolveHdfsUrl("webhdfs://127.0.0.1:22/x", conf), conf, {}).ok());
  // The run API's options are confined; `hostperf io`'s operator names the cluster.
  EXPECT_TRUE(ParseFullRunOptions(nlohmann::json::object())->hdfs_confined);
  EXPECT_FALSE(ParseIoCommand({"webhdfs://10.9.9.9:50070/x"})->options.hdfs_confined);
}

TEST(WebHdfsConfineTest, ErrorBodyIsStoredBoundedAndClean) {
  const std::string hostile = "\x1b]0;owned\x07\x1b[2J\r\n\xc2\x9b" + std::string(1 << 20, 'A');
  const nlohmann::json remote = {
      {"RemoteException", {{"exception", "IOException\x1b[31m"}, {"message", hostile}, {"javaClassName", "x"}}}};
  FakeNameNode json_error(Response("500 Internal Server Error", remote.dump()));
  FakeNameNode page_error(Response("502 Bad Gateway", hostile));
  for (const FakeNameNode* server : {&json_error, &page_error}) {
    const auto failed = ClientOf(*server)->GetFileStatus("/user/data");
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.reason(), "hdfs_error");
    EXPECT_LT(failed.error().size(), 3 * kMaxRemoteText) << failed.error().size();
    for (const char c : failed.error()) {
      const auto byte = static_cast<unsigned char>(c);
      EXPECT_TRUE(byte >= 0x20 && byte < 0x7f) << "byte " << static_cast<int>(byte) << " in " << failed.error();
    }
    EXPECT_NE(failed.error().find("AAAA"), std::string::npos) << failed.error();
  }
}

TEST(WebHdfsConfineTest, BadClusterAndDataNodeEntriesAreConfigErrors) {
  EXPECT_TRUE(LoadConfigString("[probes.disk]\nhdfs_clusters = [\"nn1.example:9870\", \"nn2\", \"[::1]:9870\"]\n"
                               "hdfs_datanodes = [\".dn.example\", \"10.0.0.7\"]\n",
                               "test.toml")
                  .ok());
  for (const char* bad :
       {"hdfs_clusters = [\"nn:99999\"]", "hdfs_clusters = [\"http://nn:9870\"]", "hdfs_clusters = [\"user@nn\"]",
        "hdfs_datanodes = [\"dn:9864\"]", "hdfs_datanodes = [\".\"]"}) {
    const auto loaded = LoadConfigString(std::string("[probes.disk]\n") + bad + "\n", "test.toml");
    EXPECT_FALSE(loaded.ok()) << bad;
  }
}

}  // namespace
}  // namespace hostperf::probes::disk::hdfs
