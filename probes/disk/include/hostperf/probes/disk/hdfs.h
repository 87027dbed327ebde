#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/http_client.h"
#include "hostperf/base/result.h"
#include "hostperf/probes/disk/workload.h"

namespace hostperf::probes::disk::hdfs {

// vioperf's HDFS read test reaches the cluster over WebHDFS (Hadoop's REST
// API on the NameNodes' and DataNodes' HTTP ports) through libcurl: no Java,
// no libhdfs. What it needs of Hadoop's configuration is read from
// HADOOP_CONF_DIR's core-site.xml and hdfs-site.xml.

// hdfs://, webhdfs:// and swebhdfs:// URLs (vioperf takes hdfs://).
bool IsHdfsUrl(std::string_view text);

// Where Hadoop's configuration and the user come from: HADOOP_CONF_DIR (else
// HADOOP_HOME/etc/hadoop) and HADOOP_USER_NAME (else the login name), as
// Hadoop's own clients take them. Read once per run; tests make their own.
struct HdfsEnvironment {
  std::filesystem::path conf_dir;  // empty: no configuration
  std::string user_name;           // simple auth's user.name; the Kerberos principal's user on a Kerberized cluster
  std::filesystem::path ca_file;   // HTTPS: trust these CAs instead of the system's
  static HdfsEnvironment FromProcess();
};

// core-site.xml and hdfs-site.xml, merged (hdfs-site.xml's values win).
struct HadoopConf {
  std::filesystem::path directory;  // empty: no configuration was read
  std::map<std::string, std::string, std::less<>> properties;
  std::optional<std::string> Get(std::string_view key) const;
};
// Reads `dir`/core-site.xml and `dir`/hdfs-site.xml; a missing file is no
// error, a malformed one is (naming the file). An empty `dir` gives an empty
// configuration.
Result<HadoopConf> LoadHadoopConf(const std::filesystem::path& dir);
// The <property><name>/<value> pairs of one Hadoop configuration document.
Result<std::map<std::string, std::string, std::less<>>> ParseHadoopXml(std::string_view xml, const std::string& where);

struct NameNode {
  std::string id;  // the HA NameNode id (nn1), or "" for a single NameNode
  std::string host;
  std::uint16_t port = 0;  // its HTTP (or HTTPS) port, WebHDFS's
  std::string Address() const;
};

// An HDFS directory URL resolved to the NameNodes that serve it.
struct HdfsTarget {
  std::string url;                  // as given
  std::string path;                 // the directory's absolute HDFS path
  bool tls = false;                 // swebhdfs://, or dfs.http.policy HTTPS_ONLY
  std::string nameservice;          // an HA name service, else ""
  std::vector<NameNode> namenodes;  // tried in this order until one is active
  bool kerberos = false;            // hadoop.security.authentication = kerberos
  // Where DataNode redirects may also go besides the cluster's own hosts
  // ([probes.disk] hdfs_datanodes): a host name or address, or ".domain".
  std::vector<std::string> datanode_hosts;
};

// hdfs://host:port/dir (the NameNode's RPC address: its HTTP address comes
// from hdfs-site.xml's rpc-address/http-address pairs, else the host with
// dfs.namenode.http-address's port or Hadoop 3's 9870), hdfs://host/dir,
// hdfs://nameservice/dir (dfs.ha.namenodes.<ns> and their http-address),
// hdfs:///dir (fs.defaultFS), webhdfs://host:http-port/dir and
// swebhdfs://host:https-port/dir (the port is WebHDFS's own).
Result<HdfsTarget> ResolveHdfsUrl(std::string_view url, const HadoopConf& conf);

// The daemon reaches only the clusters its configuration names: every
// NameNode of `target` is a host of the Hadoop configuration (fs.defaultFS,
// a dfs.namenode.{rpc,http,https}-address, an HA name service) or matches an
// entry of `clusters` ([probes.disk] hdfs_clusters: "host" or "host:port",
// the port then matching the NameNode's web port). Else an error naming the
// host and the key to set.
// Why an hdfs_clusters entry is not "host", "host:port" or "[v6]:port" ("" if it is).
std::string ClusterEntryError(const std::string& entry);
Result<void> CheckConfiguredCluster(const HdfsTarget& target, const HadoopConf& conf,
                                    const std::vector<std::string>& clusters);

// A DataNode location (OPEN's 307 Location or noredirect JSON) is followed
// only to the cluster: http (https under TLS) to a /webhdfs/v1/ path, no user
// name, on a host that is one of the target's NameNode hosts, or in the DNS
// domain of a NameNode (the NameNode's name without its first label, when
// that domain has a dot itself: nn1.hadoop.example.com admits
// dn7.hadoop.example.com, not example.com's other hosts), or a loopback
// address for a loopback NameNode, or an entry of target.datanode_hosts
// (exact, or ".domain" as a suffix). Else an error naming the host.
Result<void> CheckDataNodeLocation(const HdfsTarget& target, std::string_view location);

// One entry of LISTSTATUS.
struct FileStatus {
  std::string name;  // pathSuffix
  std::string path;  // absolute
  bool directory = false;
  std::uint64_t length = 0;
};

// A failure of the cluster as a probe failure: reason and message.
// Reasons: hdfs_unreachable (no NameNode or DataNode answered), hdfs_standby
// (every NameNode answered StandbyException), hdfs_auth (401, or SPNEGO
// refused), permission_denied (AccessControlException), bad_directory
// (FileNotFoundException, not a directory), hdfs_error (anything else the
// cluster said, with its exception and message).

// A WebHDFS client for one target: NameNode fail-over (an HA name service's
// standby or unreachable NameNode is passed over, the active one remembered),
// simple auth's user.name, SPNEGO when the cluster is Kerberized or a
// NameNode asks for it. Thread-safe.
class WebHdfsClient {
 public:
  static Result<std::unique_ptr<WebHdfsClient>> Create(HdfsTarget target, const HdfsEnvironment& env);

  Result<FileStatus> GetFileStatus(const std::string& path) const;
  Result<std::vector<FileStatus>> ListStatus(const std::string& path) const;
  // The DataNode URL that serves `path` from offset 0 (OPEN without following
  // its redirect): reads then go to the DataNode directly, with their own
  // offset and length (OpenUrl), as an HDFS client keeps reading from the
  // DataNode it was sent to.
  Result<std::string> OpenLocation(const std::string& path) const;
  // Reads [offset, offset+length) of the file behind a location, handing the
  // bytes to `on_data` as they arrive (length 0: to the end of the file);
  // `on_data` returning false stops the read early, which is no error.
  Result<void> Read(const std::string& location, std::uint64_t offset, std::uint64_t length, std::uint64_t buffer_size,
                    const std::function<bool(std::string_view)>& on_data) const;

  const HdfsTarget& target() const { return target_; }
  // The NameNode that answered last (host:port).
  std::string ActiveNameNode() const;

 private:
  WebHdfsClient(HdfsTarget target, std::string user, std::unique_ptr<HttpClient> simple,
                std::unique_ptr<HttpClient> negotiate)
      : target_(std::move(target)),
        user_(std::move(user)),
        simple_(std::move(simple)),
        negotiate_(std::move(negotiate)) {}
  // An operation on the NameNodes, passing over standby and unreachable ones.
  Result<HttpReply> NameNodeRequest(const std::string& path, const std::string& op,
                                    const std::string& extra_query) const;
  const HttpClient& ClientFor(bool negotiate) const { return negotiate ? *negotiate_ : *simple_; }

  HdfsTarget target_;
  std::string user_;
  std::unique_ptr<HttpClient> simple_;
  std::unique_ptr<HttpClient> negotiate_;
  mutable std::mutex mutex_;
  mutable std::size_t active_ = 0;      // index into target_.namenodes
  mutable bool use_negotiate_ = false;  // a NameNode asked for SPNEGO (or the config says Kerberos)
};

// The RemoteException of a WebHDFS error answer as a failure: the reason as
// above, the message naming the server, the exception and what it said (at
// most kMaxRemoteText bytes of each, printable ASCII only: the text is the
// remote's and lands in run records).
inline constexpr std::size_t kMaxRemoteText = 200;
Failure RemoteFailure(const std::string& server, int status, std::string_view body);

// `location` with its offset and length (and buffersize) query values
// replaced.
std::string WithRange(const std::string& location, std::uint64_t offset, std::uint64_t length,
                      std::uint64_t buffer_size);

// vioperf's HDFS tests over a directory's files: Read (each thread streams
// its files from the start, again and again) and SkipRead (each thread reads
// one block and skips one, a request per block). Thread t reads files t,
// t + threads, ...: one file per thread at least. Time-driven: a test ends
// at `until` (after one block per thread at least), not after a whole pass,
// since vioperf's recommended files are 10 GB. Nothing is verified: the
// data is the cluster's, not ours (vioperf ignores --disable-crc here).
class HdfsReadWorkload {
 public:
  HdfsReadWorkload(const WebHdfsClient& client, std::vector<FileStatus> files, std::size_t threads,
                   std::uint64_t block_size);

  // Read or SkipRead, as Workload::Run (other tests are refused).
  Result<void> Run(DiskTest test, std::chrono::steady_clock::time_point until, const std::atomic<bool>& stop,
                   TestCounters& counters, OpLatencies& latencies, const std::function<void()>& tick);

 private:
  Result<std::string> Location(std::size_t file);
  Result<void> ReadWorker(std::size_t thread, std::chrono::steady_clock::time_point until,
                          const std::atomic<bool>& stop, TestCounters& counters, LatencyHistogram& latency);
  Result<void> SkipReadWorker(std::size_t thread, std::chrono::steady_clock::time_point until,
                              const std::atomic<bool>& stop, TestCounters& counters, LatencyHistogram& latency);

  const WebHdfsClient& client_;
  std::vector<FileStatus> files_;
  std::size_t threads_;
  std::uint64_t block_size_;
  // The DataNode location of each file, asked once; each entry is touched
  // only by the thread that reads that file.
  std::vector<std::string> locations_;
  std::vector<std::size_t> next_block_;  // SkipRead's position in each file
};

}  // namespace hostperf::probes::disk::hdfs
