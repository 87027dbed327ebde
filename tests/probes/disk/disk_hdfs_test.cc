// Hadoop configuration, HDFS URL resolution and WebHDFS error mapping of the
// disk probe's HDFS read test. The client against a server is tested in
// tests/integration/hdfs_test.cc (a WebHDFS protocol simulator).
#include <gtest/gtest.h>

#include <fstream>

#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/probe.h"
#include "temp_dir.h"

namespace hostperf::probes::disk::hdfs {
namespace {

std::string Property(const std::string& name, const std::string& value) {
  return "  <property>\n    <name>" + name + "</name>\n    <value>" + value + "</value>\n  </property>\n";
}

std::string Document(const std::string& properties) {
  return "<?xml version=\"1.0\"?>\n<?xml-stylesheet type=\"text/xsl\" href=\"configuration.xsl\"?>\n"
         "<configuration>\n" +
         properties + "</configuration>\n";
}

HadoopConf Conf(std::map<std::string, std::string, std::less<>> properties) {
  HadoopConf conf;
  conf.directory = "/etc/hadoop/conf";
  conf.properties = std::move(properties);
  return conf;
}

// The HA layout of a typical cluster: name service "prod", NameNodes nn1 and nn2.
HadoopConf HaConf() {
  return Conf({{"fs.defaultFS", "hdfs://prod"},
               {"dfs.nameservices", "prod"},
               {"dfs.ha.namenodes.prod", "nn1, nn2"},
               {"dfs.namenode.rpc-address.prod.nn1", "nn-a.example:8020"},
               {"dfs.namenode.rpc-address.prod.nn2", "nn-b.example:8020"},
               {"dfs.namenode.http-address.prod.nn1", "nn-a.example:9870"},
               {"dfs.namenode.http-address.prod.nn2", "nn-b.example:9870"},
               {"dfs.namenode.https-address.prod.nn1", "nn-a.example:9871"},
               {"dfs.namenode.https-address.prod.nn2", "nn-b.example:9871"}});
}

TEST(HdfsUrlTest, RecognisesTheSchemesVioperfAndHadoopUse) {
  EXPECT_TRUE(IsHdfsUrl("hdfs://nn:8020/data"));
  EXPECT_TRUE(IsHdfsUrl("HDFS:///data"));
  EXPECT_TRUE(IsHdfsUrl("webhdfs://nn:9870/data"));
  EXPECT_TRUE(IsHdfsUrl("swebhdfs://nn:9871/data"));
  EXPECT_FALSE(IsHdfsUrl("/data/hdfs://x"));
  EXPECT_FALSE(IsHdfsUrl("hdfs"));
  EXPECT_FALSE(IsHdfsUrl("s3://bucket/data"));
}

TEST(HadoopConfTest, ReadsPropertiesAndExpandsVariables) {
  const auto parsed = ParseHadoopXml(
      Document(Property("hadoop.tmp.dir", "/tmp/hadoop") + Property("dfs.name.dir", "${hadoop.tmp.dir}/name") +
               Property("  fs.defaultFS ", "hdfs://prod")),
      "core-site.xml");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  HadoopConf conf;
  conf.properties = *parsed;
  EXPECT_EQ(conf.Get("dfs.name.dir"), "/tmp/hadoop/name");
  EXPECT_EQ(conf.Get("fs.defaultFS"), "hdfs://prod");
  EXPECT_FALSE(conf.Get("dfs.nameservices").has_value());
}

TEST(HadoopConfTest, MalformedXmlIsAnErrorNamingTheFile) {
  const auto broken = ParseHadoopXml("<configuration><property><name>x</name>", "/conf/hdfs-site.xml");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().find("/conf/hdfs-site.xml"), std::string::npos) << broken.error();
  const auto other = ParseHadoopXml("<beans/>", "/conf/core-site.xml");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().find("no <configuration>"), std::string::npos) << other.error();
}

TEST(HadoopConfTest, LoadsBothFilesHdfsSiteWinning) {
  test_support::TempDir dir;
  std::ofstream(dir.path() / "core-site.xml")
      << Document(Property("fs.defaultFS", "hdfs://prod") + Property("dfs.http.policy", "HTTP_ONLY"));
  std::ofstream(dir.path() / "hdfs-site.xml") << Document(Property("dfs.http.policy", "HTTPS_ONLY"));
  const auto conf = LoadHadoopConf(dir.path());
  ASSERT_TRUE(conf.ok()) << conf.error();
  EXPECT_EQ(conf->Get("fs.defaultFS"), "hdfs://prod");
  EXPECT_EQ(conf->Get("dfs.http.policy"), "HTTPS_ONLY");

  // No HADOOP_CONF_DIR: an empty configuration; a missing directory: an error.
  EXPECT_TRUE(LoadHadoopConf("").ok());
  const auto missing = LoadHadoopConf(dir.path() / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("HADOOP_CONF_DIR"), std::string::npos) << missing.error();
}

TEST(ResolveHdfsUrlTest, WebHdfsUrlNamesTheWebPortItself) {
  const auto target = ResolveHdfsUrl("webhdfs://127.0.0.1:50070/user/data/", Conf({}));
  ASSERT_TRUE(target.ok()) << target.error();
  EXPECT_EQ(target->path, "/user/data");
  ASSERT_EQ(target->namenodes.size(), 1u);
  EXPECT_EQ(target->namenodes[0].Address(), "127.0.0.1:50070");
  EXPECT_FALSE(target->tls);
  const auto secure = ResolveHdfsUrl("swebhdfs://[::1]/d", Conf({}));
  ASSERT_TRUE(secure.ok()) << secure.error();
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(secure->namenodes[0].Address(), "[::1]:9871");
}

TEST(ResolveHdfsUrlTest, RpcAddressMapsToItsWebAddress) {
  const auto target = ResolveHdfsUrl("hdfs://nn-b.example:8020/user/data", HaConf());
  ASSERT_TRUE(target.ok()) << target.error();
  ASSERT_EQ(target->namenodes.size(), 1u);
  EXPECT_EQ(target->namenodes[0].Address(), "nn-b.example:9870");

  // Unknown RPC address: the same host on the configured web port (0.0.0.0
  // meaning "this host"), else Hadoop 3's 9870.
  const auto configured = ResolveHdfsUrl("hdfs://other:9000/d", Conf({{"dfs.namenode.http-address", "0.0.0.0:50070"}}));
  ASSERT_TRUE(configured.ok()) << configured.error();
  EXPECT_EQ(configured->namenodes[0].Address(), "other:50070");
  const auto bare = ResolveHdfsUrl("hdfs://other/d", Conf({}));
  ASSERT_TRUE(bare.ok()) << bare.error();
  EXPECT_EQ(bare->namenodes[0].Address(), "other:9870");
}

TEST(ResolveHdfsUrlTest, NameServiceListsItsNameNodesInOrder) {
  const auto target = ResolveHdfsUrl("hdfs://prod/user/data", HaConf());
  ASSERT_TRUE(target.ok()) << target.error();
  EXPECT_EQ(target->nameservice, "prod");
  ASSERT_EQ(target->namenodes.size(), 2u);
  EXPECT_EQ(target->namenodes[0].id, "nn1");
  EXPECT_EQ(target->namenodes[0].Address(), "nn-a.example:9870");
  EXPECT_EQ(target->namenodes[1].Address(), "nn-b.example:9870");

  auto https = HaConf();
  https.properties["dfs.http.policy"] = "HTTPS_ONLY";
  const auto secure = ResolveHdfsUrl("hdfs://prod/user/data", https);
  ASSERT_TRUE(secure.ok()) << secure.error();
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(secure->namenodes[1].Address(), "nn-b.example:9871");

  auto incomplete = HaConf();
  incomplete.properties.erase("dfs.namenode.http-address.prod.nn2");
  const auto refused = ResolveHdfsUrl("hdfs://prod/user/data", incomplete);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("dfs.namenode.http-address.prod.nn2"), std::string::npos) << refused.error();
}

TEST(ResolveHdfsUrlTest, NoAuthorityMeansDefaultFs) {
  const auto target = ResolveHdfsUrl("hdfs:///user/data", HaConf());
  ASSERT_TRUE(target.ok()) << target.error();
  EXPECT_EQ(target->nameservice, "prod");
  EXPECT_EQ(target->namenodes.size(), 2u);

  HadoopConf none;
  const auto refused = ResolveHdfsUrl("hdfs:///user/data", none);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("HADOOP_CONF_DIR"), std::string::npos) << refused.error();
}

TEST(ResolveHdfsUrlTest, KerberosComesFromCoreSite) {
  auto conf = HaConf();
  conf.properties["hadoop.security.authentication"] = "Kerberos";
  const auto target = ResolveHdfsUrl("hdfs://prod/d", conf);
  ASSERT_TRUE(target.ok()) << target.error();
  EXPECT_TRUE(target->kerberos);
  EXPECT_FALSE(ResolveHdfsUrl("hdfs://prod/d", HaConf())->kerberos);
}

TEST(ResolveHdfsUrlTest, BadUrlsAreClearErrors) {
  for (const char* url : {"hdfs://nn:99999/d", "hdfs://nn:port/d", "hdfs://nn:8020", "hdfs://nn:8020/d?x=1",
                          "hdfs://user@nn:8020/d", "hdfs://:8020/d"}) {
    const auto target = ResolveHdfsUrl(url, Conf({}));
    ASSERT_FALSE(target.ok()) << url;
    EXPECT_NE(target.error().find(url), std::string::npos) << target.error();
  }
}

TEST(WebHdfsErrorsTest, RemoteExceptionsBecomeReasons) {
  const auto failure = [](int status, const std::string& exception) {
    return RemoteFailure(
        "nn:9870", status,
        R"({"RemoteException":{"exception":")" + exception + R"(","javaClassName":"x","message":"it said so"}})");
  };
  EXPECT_EQ(failure(404, "FileNotFoundException").reason, "bad_directory");
  EXPECT_EQ(failure(403, "AccessControlException").reason, "permission_denied");
  EXPECT_EQ(failure(403, "StandbyException").reason, "hdfs_standby");
  EXPECT_EQ(failure(403, "AuthenticationException").reason, "hdfs_auth");
  const Failure other = failure(500, "IOException");
  EXPECT_EQ(other.reason, "hdfs_error");
  EXPECT_EQ(other.message, "nn:9870 answered 500 IOException: it said so");
  // Not WebHDFS's JSON (a proxy's page): the status and an excerpt.
  const Failure page = RemoteFailure("nn:9870", 502, "<html>Bad\r\nGateway</html>");
  EXPECT_EQ(page.reason, "hdfs_error");
  EXPECT_EQ(page.message, "nn:9870 answered HTTP 502: <html>Bad  Gateway</html>");
  EXPECT_EQ(RemoteFailure("nn:9870", 401, "").reason, "hdfs_auth");
}

TEST(WebHdfsRangeTest, ReplacesOffsetLengthAndBufferSize) {
  EXPECT_EQ(WithRange("http://dn:9864/webhdfs/v1/f?op=OPEN&namenoderpcaddress=nn:8020&offset=0", 4096, 1024, 1024),
            "http://dn:9864/webhdfs/v1/f?op=OPEN&namenoderpcaddress=nn:8020&offset=4096&length=1024&buffersize=1024");
  EXPECT_EQ(WithRange("http://dn/f", 0, 0, 0), "http://dn/f?offset=0");
}

TEST(HdfsOptionsTest, IoTakesHdfsUrlsAndACaFile) {
  const auto parsed = ParseIoCommand({"--hdfs-ca-file", "/etc/ssl/hdfs-ca.pem", "hdfs:///user/data"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->options.hdfs_ca_file, "/etc/ssl/hdfs-ca.pem");
  ASSERT_EQ(parsed->options.directories.size(), 1u);
  EXPECT_EQ(parsed->options.directories[0], "hdfs:///user/data");
}

TEST(HdfsOptionsTest, ScheduledDirectoriesRefuseHdfs) {
  const auto loaded = LoadConfigString("[probes.disk]\ndirectories = [\"hdfs://nn:8020/data\"]\n", "test.toml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().find("full runs only"), std::string::npos) << loaded.error();
}

}  // namespace
}  // namespace hostperf::probes::disk::hdfs
