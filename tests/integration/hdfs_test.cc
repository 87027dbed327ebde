// vioperf's HDFS read test through the real binaries (`hostperf io` and the
// daemon's run API) against tests/integration/webhdfs_sim.py: a WebHDFS
// protocol simulator written from Apache's published WebHDFS REST API
// document. No Hadoop runs here (neither Debian nor npm packages one), so
// what is tested is our side of that protocol: NameNode and DataNode on
// separate ports, OPEN's redirect, LISTSTATUS/GETFILESTATUS, RemoteException
// errors, an HA pair with a standby NameNode, simple auth's user.name and
// SPNEGO (against a real MIT KDC from Debian's krb5-kdc, when installed:
// tests/integration/kdc_fixture.sh; skipped with the reason otherwise).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::uint64_t kMiB = 1 << 20;
const std::string kSimulator = std::string(HOSTPERF_SOURCE_DIR) + "/tests/integration/webhdfs_sim.py";
const std::string kKdcFixture = std::string(HOSTPERF_SOURCE_DIR) + "/tests/integration/kdc_fixture.sh";

// The simulator in a child process: its ports once it is ready, and the
// requests it served.
class WebHdfsSim {
 public:
  WebHdfsSim(const TempDir& dir, const json& config, const std::string& name = "sim")
      : ready_file_(dir.path() + "/" + name + "-ports.json"), log_file_(dir.path() + "/" + name + "-requests.jsonl") {
    const std::string config_file = dir.Write(name + ".json", config.dump());
    process_ = std::make_unique<ChildProcess>(
        kSimulator,
        std::vector<std::string>{"--config", config_file, "--ready-file", ready_file_, "--log-file", log_file_});
    const auto until = std::chrono::steady_clock::now() + seconds(20);
    while (std::chrono::steady_clock::now() < until && !fs::exists(ready_file_)) {
      std::this_thread::sleep_for(milliseconds(50));
    }
    ports_ = json::parse(ReadText(ready_file_), nullptr, false);
    EXPECT_TRUE(ports_.is_object()) << "the simulator did not start: " << process_->Stderr();
  }

  int NameNode(std::size_t i) const { return ports_.is_object() ? ports_["namenodes"][i].get<int>() : 0; }
  int DataNode() const { return ports_.is_object() ? ports_["datanode"].get<int>() : 0; }
  std::string WebHdfsUrl(const std::string& path, std::size_t nn = 0) const {
    return "webhdfs://127.0.0.1:" + std::to_string(NameNode(nn)) + path;
  }

  std::vector<json> Requests() const {
    std::vector<json> out;
    std::istringstream lines(ReadText(log_file_));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
    }
    return out;
  }

 private:
  std::string ready_file_;
  std::string log_file_;
  std::unique_ptr<ChildProcess> process_;
  json ports_;
};

// Two 12 MiB files (vioperf's rule: 10 MB at least, one per thread) and a
// small one to be ignored; a denied directory; a plain file.
json Cluster(json namenodes = json::array({{{"state", "active"}}})) {
  return {{"namenodes", std::move(namenodes)},
          {"files",
           {{"/user/data/part-0", 12 * kMiB},
            {"/user/data/part-1", 12 * kMiB},
            {"/user/data/_SUCCESS", 0},
            {"/user/data/small", 4096},
            {"/user/secret/part-0", 12 * kMiB}}},
          {"dirs", {"/user/empty"}},
          {"denied", {"/user/secret"}},
          {"require_user", "alice"}};
}

struct IoRun {
  int status = -1;
  std::string out;
  std::string err;
};

// `hostperf io ARGS` with `env`, to completion.
IoRun Io(std::vector<std::string> args, std::map<std::string, std::string> env, seconds patience = seconds(90)) {
  ChildProcess process(
      HOSTPERF_CLI_BIN,
      [&] {
        args.insert(args.begin(), "io");
        return args;
      }(),
      std::move(env));
  const auto status = process.Wait(patience);
  EXPECT_TRUE(status.has_value()) << "hostperf io did not end";
  return {status.value_or(-1), process.Stdout(), process.Stderr()};
}

std::map<std::string, std::string> Alice(const std::string& conf_dir = "") {
  return {{"HADOOP_USER_NAME", "alice"}, {"HADOOP_CONF_DIR", conf_dir}};
}

std::string HadoopXml(const std::map<std::string, std::string>& properties) {
  std::string out = "<?xml version=\"1.0\"?>\n<configuration>\n";
  for (const auto& [name, value] : properties) {
    out += "  <property><name>" + name + "</name><value>" + value + "</value></property>\n";
  }
  return out + "</configuration>\n";
}

const json* FindTest(const json& directory, const std::string& name) {
  for (const json& test : directory["tests"]) {
    if (test.value("test", "") == name) return &test;
  }
  return nullptr;
}

TEST(HdfsIo, ReadsAndSkipReadsThroughTheDataNodeAsTheUser) {
  TempDir dir;
  WebHdfsSim sim(dir, Cluster());
  const std::string log = dir.path() + "/log.json";
  const IoRun run = Io({"--duration=2s", "--log-interval=500ms", "--thread-count=2", "--max-buffer-size=1mb",
                        "--log-file=" + log, sim.WebHdfsUrl("/user/data")},
                       Alice());
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Reading HDFS directory \"" + sim.WebHdfsUrl("/user/data") + "\""));
  EXPECT_THAT(run.out, HasSubstr("(2 files, 24 MB"));
  EXPECT_THAT(run.out, HasSubstr("\nRead "));
  EXPECT_THAT(run.out, HasSubstr("\nSkipRead "));
  // vioperf tests reads only on HDFS.
  EXPECT_THAT(run.out, Not(HasSubstr("\nWrite ")));
  EXPECT_THAT(run.out, Not(HasSubstr("\nReWrite ")));

  const json result = json::parse(ReadText(log), nullptr, false);
  ASSERT_TRUE(result.is_object()) << ReadText(log);
  const json& directory = result["directories"][0];
  EXPECT_EQ(directory.value("files", 0), 2);
  EXPECT_EQ(directory.value("small_files_ignored", 0), 2);
  const json* read = FindTest(directory, "Read");
  const json* skip = FindTest(directory, "SkipRead");
  ASSERT_NE(read, nullptr) << directory.dump();
  ASSERT_NE(skip, nullptr) << directory.dump();
  EXPECT_GT((*read)["bytes_read"].get<double>(), 2.0 * kMiB);
  EXPECT_GT((*skip)["ops"].get<double>(), 2);
  EXPECT_EQ((*read)["bytes_written"].get<double>(), 0);

  // What went over the wire: the NameNode asked as alice (simple auth), the
  // data came from the DataNode; SkipRead asked one 1 MiB block at a time,
  // every other block of a file.
  double served = 0;
  int skip_reads = 0;
  for (const json& request : sim.Requests()) {
    if (request["server"] == "dn") {
      served += request["bytes"].get<double>();
      const json& query = request["query"];
      if (query.contains("length")) {
        ++skip_reads;
        EXPECT_EQ(query["length"], std::to_string(kMiB));
        EXPECT_EQ(std::stoull(query["offset"].get<std::string>()) % kMiB, 0u);
      }
    } else {
      EXPECT_EQ(request["user"], "alice") << request.dump();
      EXPECT_LT(request["status"].get<int>(), 400) << request.dump();
    }
  }
  EXPECT_GE(served, (*read)["bytes_read"].get<double>() + (*skip)["bytes_read"].get<double>());
  EXPECT_EQ(skip_reads, (*skip)["ops"].get<int>());
}

// A NameNode before Hadoop 2.8 ignores noredirect=true and answers OPEN with
// the 307 itself: its Location is followed all the same.
TEST(HdfsIo, FollowsTheRedirectOfAnOlderNameNode) {
  TempDir dir;
  WebHdfsSim sim(dir, Cluster(json::array({{{"state", "active"}, {"noredirect", false}}})));
  const IoRun run = Io({"--duration=1s", "--thread-count=2", "--json", sim.WebHdfsUrl("/user/data")}, Alice());
  ASSERT_EQ(run.status, 0) << run.err;
  int redirects = 0;
  int data_reads = 0;
  for (const json& request : sim.Requests()) {
    if (request["server"] == "nn0" && request["query"].value("op", "") == "OPEN") {
      EXPECT_EQ(request["status"], 307) << request.dump();
      ++redirects;
    }
    if (request["server"] == "dn") ++data_reads;
  }
  // One OPEN per file (each thread keeps its DataNode location); every read
  // after that at the DataNode.
  EXPECT_EQ(redirects, 2);
  EXPECT_GT(data_reads, 2);
}

TEST(HdfsIo, ClusterErrorsAreClearMessagesWithReasons) {
  TempDir dir;
  WebHdfsSim sim(dir, Cluster());
  struct Case {
    std::string path;
    std::vector<std::string> extra;
    std::string reason;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/user/missing", {}, "bad_directory", "FileNotFoundException: File does not exist: /user/missing"},
      {"/user/secret", {}, "permission_denied", "AccessControlException"},
      {"/user/data/part-0", {}, "bad_directory", "is a file: vioperf reads a directory of files"},
      {"/user/empty", {}, "bad_directory", "holds 0 file(s) of 10 MB or more"},
      {"/user/data", {"--thread-count=3"}, "bad_directory", "holds 2 file(s) of 10 MB or more (2 smaller ignored)"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--duration=1s", "--json"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    args.push_back(sim.WebHdfsUrl(c.path));
    const IoRun run = Io(args, Alice());
    EXPECT_EQ(run.status, 1) << c.path << ": " << run.err;
    EXPECT_THAT(run.err, HasSubstr("hostperf io: " + c.reason + ": ")) << c.path;
    EXPECT_THAT(run.err, HasSubstr(c.message)) << c.path;
  }
  // Another user than the cluster allows.
  const IoRun bob = Io({"--duration=1s", "--json", sim.WebHdfsUrl("/user/data")}, {{"HADOOP_USER_NAME", "bob"}});
  EXPECT_THAT(bob.err, HasSubstr("permission_denied")) << bob.err;
  EXPECT_THAT(bob.err, HasSubstr("user=bob")) << bob.err;
  // Nobody listening.
  const IoRun dead = Io(
      {"--duration=1s", "--json", "webhdfs://127.0.0.1:" + std::to_string(FreeLoopbackPort()) + "/user/data"}, Alice());
  EXPECT_THAT(dead.err, HasSubstr("hostperf io: hdfs_unreachable: ")) << dead.err;
  // hdfs:/// without a configuration names what is missing.
  const IoRun nowhere = Io({"--duration=1s", "--json", "hdfs:///user/data"}, Alice());
  EXPECT_THAT(nowhere.err, HasSubstr("bad_options")) << nowhere.err;
  EXPECT_THAT(nowhere.err, HasSubstr("HADOOP_CONF_DIR")) << nowhere.err;
}

TEST(HdfsIo, HaNameServiceFailsOverToTheActiveNameNode) {
  TempDir dir;
  WebHdfsSim sim(dir, Cluster(json::array({{{"state", "standby"}}, {{"state", "active"}}})));
  const std::string conf = dir.path() + "/conf";
  fs::create_directories(conf);
  const auto nn = [&](std::size_t i) { return "127.0.0.1:" + std::to_string(sim.NameNode(i)); };
  std::ofstream(conf + "/core-site.xml") << HadoopXml({{"fs.defaultFS", "hdfs://testns"}});
  std::ofstream(conf + "/hdfs-site.xml") << HadoopXml({{"dfs.nameservices", "testns"},
                                                       {"dfs.ha.namenodes.testns", "nn1,nn2"},
                                                       {"dfs.namenode.rpc-address.testns.nn1", "127.0.0.1:8020"},
                                                       {"dfs.namenode.rpc-address.testns.nn2", "127.0.0.1:8021"},
                                                       {"dfs.namenode.http-address.testns.nn1", nn(0)},
                                                       {"dfs.namenode.http-address.testns.nn2", nn(1)}});
  // hdfs:///dir: fs.defaultFS's name service; nn1 is standby, nn2 answers.
  for (const std::string url : {"hdfs:///user/data", "hdfs://testns/user/data"}) {
    const IoRun run = Io({"--duration=1s", "--thread-count=2", "--json", url}, Alice(conf));
    ASSERT_EQ(run.status, 0) << url << ": " << run.err;
    const json result = json::parse(run.out, nullptr, false);
    ASSERT_TRUE(result.is_object()) << run.out;
    EXPECT_EQ(result["directories"][0].value("namenode", ""), nn(1)) << url;
    EXPECT_EQ(result["directories"][0].value("nameservice", ""), "testns") << url;
  }
  // hdfs://host:rpc-port/dir: the web address configured beside that RPC address.
  const IoRun by_rpc =
      Io({"--duration=1s", "--thread-count=2", "--json", "hdfs://127.0.0.1:8021/user/data"}, Alice(conf));
  ASSERT_EQ(by_rpc.status, 0) << by_rpc.err;
  EXPECT_EQ(json::parse(by_rpc.out, nullptr, false)["directories"][0].value("namenode", ""), nn(1));
  int standby_answers = 0;
  for (const json& request : sim.Requests()) {
    if (request["server"] == "nn0") {
      EXPECT_EQ(request["status"], 403);
      ++standby_answers;
    }
  }
  EXPECT_GT(standby_answers, 0);

  // Both standby: the run fails naming each.
  WebHdfsSim both(dir, Cluster(json::array({{{"state", "standby"}}, {{"state", "standby"}}})), "both");
  std::ofstream(conf + "/hdfs-site.xml") << HadoopXml(
      {{"dfs.nameservices", "testns"},
       {"dfs.ha.namenodes.testns", "nn1,nn2"},
       {"dfs.namenode.http-address.testns.nn1", "127.0.0.1:" + std::to_string(both.NameNode(0))},
       {"dfs.namenode.http-address.testns.nn2", "127.0.0.1:" + std::to_string(both.NameNode(1))}});
  const IoRun none = Io({"--duration=1s", "--json", "hdfs:///user/data"}, Alice(conf));
  EXPECT_EQ(none.status, 1);
  EXPECT_THAT(none.err, HasSubstr("hdfs_standby: no active NameNode of name service testns answered: nn1 ("));
  EXPECT_THAT(none.err, HasSubstr("nn2 (127.0.0.1:" + std::to_string(both.NameNode(1)) + ") is standby"));
}

// swebhdfs:// (HTTPS to the NameNode and the DataNode): a cluster CA that
// the system does not trust is given with --hdfs-ca-file.
TEST(HdfsIo, SwebhdfsTrustsTheGivenClusterCa) {
  TempDir dir;
  const std::string cert = dir.path() + "/cert.pem";
  const std::string key = dir.path() + "/key.pem";
  const CommandResult made =
      RunCommand("/usr/bin/openssl",
                 {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj",
                  "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"},
                 seconds(60));
  ASSERT_EQ(made.status, 0) << made.err;
  json config = Cluster();
  config["tls"] = {{"cert", cert}, {"key", key}};
  WebHdfsSim sim(dir, config);
  const std::string url = "swebhdfs://127.0.0.1:" + std::to_string(sim.NameNode(0)) + "/user/data";
  const IoRun untrusted = Io({"--duration=1s", "--json", url}, Alice());
  EXPECT_EQ(untrusted.status, 1);
  EXPECT_THAT(untrusted.err, HasSubstr("hostperf io: hdfs_unreachable: ")) << untrusted.err;
  EXPECT_THAT(untrusted.err, HasSubstr("TLS")) << untrusted.err;
  const IoRun trusted = Io({"--duration=1s", "--thread-count=2", "--json", "--hdfs-ca-file=" + cert, url}, Alice());
  ASSERT_EQ(trusted.status, 0) << trusted.err;
  const json result = json::parse(trusted.out, nullptr, false);
  ASSERT_TRUE(result.is_object()) << trusted.out;
  EXPECT_GT((*FindTest(result["directories"][0], "Read"))["bytes_read"].get<double>(), 0);
}

TEST(HdfsIo, NegotiateChallengeWithoutTicketIsAnAuthFailure) {
  TempDir dir;
  json config = Cluster();
  config["negotiate"] = json::object();
  WebHdfsSim sim(dir, config);
  // No ticket cache anywhere: SPNEGO cannot answer the challenge.
  auto env = Alice();
  env["KRB5CCNAME"] = "FILE:" + dir.path() + "/no-ccache";
  const IoRun run = Io({"--duration=1s", "--json", sim.WebHdfsUrl("/user/data")}, env);
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.err, HasSubstr("hostperf io: hdfs_auth: ")) << run.err;
  EXPECT_THAT(run.err, HasSubstr("kinit")) << run.err;
}

// SPNEGO end to end: a real MIT KDC (hermetic, in a temporary directory), a
// ticket for alice, the simulator accepting with its HTTP/localhost keytab
// through GSS-API.
TEST(HdfsIo, KerberizedClusterIsReadWithTheTicketCache) {
  TempDir dir;
  const std::string kdc = dir.path() + "/kdc";
  fs::create_directories(kdc);
  const CommandResult started = RunCommand(kKdcFixture, {"start", kdc}, seconds(60));
  if (started.status == 77) GTEST_SKIP() << started.out << started.err;
  ASSERT_EQ(started.status, 0) << started.out << started.err;
  struct StopKdc {
    std::string dir;
    ~StopKdc() { (void)RunCommand(kKdcFixture, {"stop", dir}, seconds(20)); }
  } stop_kdc{kdc};
  std::map<std::string, std::string> env;
  std::istringstream lines(ReadText(kdc + "/env"));
  for (std::string line; std::getline(lines, line);) {
    if (const auto eq = line.find('='); eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  ASSERT_TRUE(env.contains("KRB5CCNAME")) << ReadText(kdc + "/env");

  json config = Cluster();
  config.erase("require_user");
  config["negotiate"] = {{"keytab", kdc + "/HTTP.keytab"}};
  WebHdfsSim sim(dir, config);
  const std::string conf = dir.path() + "/conf";
  fs::create_directories(conf);
  std::ofstream(conf + "/core-site.xml") << HadoopXml({{"hadoop.security.authentication", "kerberos"}});
  env["HADOOP_CONF_DIR"] = conf;
  env["HADOOP_USER_NAME"] = "alice";
  // SPNEGO names the service after the URL's host: HTTP/localhost.
  const std::string url = "webhdfs://localhost:" + std::to_string(sim.NameNode(0)) + "/user/data";
  const IoRun run = Io({"--duration=1s", "--thread-count=2", "--json", url}, env);
  ASSERT_EQ(run.status, 0) << run.err;
  int authenticated = 0;
  for (const json& request : sim.Requests()) {
    if (request["server"] == "dn") continue;
    EXPECT_TRUE(request["user"].is_null()) << "simple auth's user.name sent under Kerberos: " << request.dump();
    if (request["status"] == 200) {
      EXPECT_EQ(request["principal"], "alice@HOSTPERF.TEST") << request.dump();
      ++authenticated;
    }
  }
  EXPECT_GT(authenticated, 0);
}

// The daemon's run API runs the same test as a full run.
TEST(HdfsRunApi, FullRunReadsAnHdfsDirectory) {
  TempDir dir;
  WebHdfsSim sim(dir, Cluster());
  const std::string token = dir.Write("token", "hdfs-integration-token-0123456789");
  const std::string config = dir.Write(
      "c.toml",
      "state_directory = \"" + dir.path() + "/state\"\n[api]\ntoken_file = \"" + token +
          "\"\n[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
          "[probes.disk]\nenabled = false\nhdfs_clusters = [\"127.0.0.1\"]\n[probes.net]\nenabled = false\nports = [" +
          std::to_string(FreeLoopbackPort()) + "]\n");
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"},
                      {{"HADOOP_USER_NAME", "alice"}});
  const int port = daemon.ListeningPort();
  ASSERT_GT(port, 0) << daemon.Stderr();
  const std::map<std::string, std::string> headers = {{"Authorization", "Bearer hdfs-integration-token-0123456789"},
                                                      {"Content-Type", "application/json"}};
  const json body = {
      {"probes", {"disk"}},
      {"duration", "2s"},
      {"options",
       {{"disk", {{"directories", {sim.WebHdfsUrl("/user/data")}}, {"thread_count", 2}, {"log_interval", "500ms"}}}}}};
  const auto accepted = HttpRequest(port, "POST", "/api/v1/runs", headers, body.dump());
  ASSERT_TRUE(accepted.has_value());
  ASSERT_EQ(accepted->status, 202) << accepted->body;
  const std::string id = json::parse(accepted->body)["id"];
  json run;
  const auto until = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const auto reply = HttpRequest(port, "GET", "/api/v1/runs/" + id, headers);
    run = reply ? json::parse(reply->body, nullptr, false) : json();
    const std::string state = run.is_object() ? run.value("state", "") : "";
    if (state != "queued" && state != "running" && !state.empty()) break;
    std::this_thread::sleep_for(milliseconds(200));
  }
  ASSERT_EQ(run.value("state", ""), "succeeded") << run.dump(2);
  const std::string text = run.dump();
  EXPECT_THAT(text, HasSubstr("\"test\":\"Read\""));
  EXPECT_THAT(text, HasSubstr("\"test\":\"SkipRead\""));
  EXPECT_THAT(text, Not(HasSubstr("\"test\":\"Write\"")));
}

// A run-API request cannot introduce a cluster: a NameNode that neither
// HADOOP_CONF_DIR nor probes.disk.hdfs_clusters names is refused before any
// connection (the simulator sees no request).
TEST(HdfsRunApi, UnconfiguredClusterIsRefusedBeforeAnyConnection) {
  TempDir dir;
  WebHdfsSim sim(dir, Cluster());
  const std::string token = dir.Write("token", "hdfs-integration-token-0123456789");
  const std::string config = dir.Write(
      "c.toml", "state_directory = \"" + dir.path() + "/state\"\n[api]\ntoken_file = \"" + token +
                    "\"\n[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
                    "[probes.disk]\nenabled = false\nhdfs_clusters = [\"10.255.255.1\"]\n[probes.net]\nenabled = "
                    "false\nports = [" +
                    std::to_string(FreeLoopbackPort()) + "]\n");
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"},
                      {{"HADOOP_USER_NAME", "alice"}});
  const int port = daemon.ListeningPort();
  ASSERT_GT(port, 0) << daemon.Stderr();
  const std::map<std::string, std::string> headers = {{"Authorization", "Bearer hdfs-integration-token-0123456789"},
                                                      {"Content-Type", "application/json"}};
  const json body = {{"probes", {"disk"}},
                     {"duration", "2s"},
                     {"options", {{"disk", {{"directories", {sim.WebHdfsUrl("/user/data")}}, {"thread_count", 1}}}}}};
  const auto accepted = HttpRequest(port, "POST", "/api/v1/runs", headers, body.dump());
  ASSERT_TRUE(accepted.has_value());
  ASSERT_EQ(accepted->status, 202) << accepted->body;
  const std::string id = json::parse(accepted->body)["id"];
  json run;
  const auto until = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const auto reply = HttpRequest(port, "GET", "/api/v1/runs/" + id, headers);
    run = reply ? json::parse(reply->body, nullptr, false) : json();
    const std::string state = run.is_object() ? run.value("state", "") : "";
    if (state != "queued" && state != "running" && !state.empty()) break;
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_EQ(run.value("state", ""), "failed") << run.dump(2);
  EXPECT_THAT(run.dump(), HasSubstr("is not a cluster of this host's configuration"));
  EXPECT_THAT(sim.Requests(), ::testing::IsEmpty());
}

}  // namespace
}  // namespace hostperf::testing
