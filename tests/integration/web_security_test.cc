// --web.config.file against the real hostperf_exporter on port 0: TLS scrapes
// with curl, mutual TLS, basic auth, a malformed file at start and a changed
// file picked up while running. Certificates are made at test time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "../common/test_pki.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

// bcrypt hashes made with libcrypt at cost 4 (fast under sanitizers).
constexpr const char* kAliceHash = "$2b$04$VhCFJVuKkHrePK3aIU.IQerru423cQtzfL3wT7hoymlUbXRxsZJzS";  // "alice-pw"
constexpr const char* kBobHash = "$2b$04$/sTYSzqLMiPKEnkC5db.DuyMAeZcw480CVPCOsChf/Y9cmGJ5xFzW";    // "bob-pw"

// No probes: these tests are about the HTTP front door.
std::string QuietConfig(const TempDir& dir) {
  return "state_directory = \"" + dir.path() +
         "/state\"\n"
         "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
         "[probes.disk]\nenabled = false\n[probes.net]\nenabled = false\n";
}

class WebSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = MakeTestPki(dir_.path());
    ASSERT_TRUE(pki_.ok) << "openssl CLI failed";
    config_ = dir_.Write("hostperf.toml", QuietConfig(dir_));
  }

  // Starts the exporter with `web_config` as web.yml; returns its port or 0.
  int Start(const std::string& web_config) {
    web_file_ = dir_.Write("web.yml", web_config);
    exporter_.emplace(HOSTPERF_EXPORTER_BIN,
                      std::vector<std::string>{"--config.file=" + config_, "--web.config.file=" + web_file_,
                                               "--web.listen-address=127.0.0.1:0"});
    return exporter_->ListeningPort();
  }

  // curl over TLS; returns the HTTP status, or -(curl's exit code) when the
  // transfer failed (handshake refused, untrusted certificate, ...).
  int Curl(int port, const std::vector<std::string>& extra) {
#ifdef HOSTPERF_CURL
    std::vector<std::string> args = {"-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back("https://127.0.0.1:" + std::to_string(port) + "/metrics");
    const auto result = RunCommand(HOSTPERF_CURL, args, seconds(20));
    last_curl_error_ = result.err;
    if (result.status != 0) return -result.status;
    return std::stoi(result.out);
#else
    (void)port;
    (void)extra;
    return -1000;
#endif
  }

  TempDir dir_;
  TestPki pki_;
  std::string config_;
  std::string web_file_;
  std::optional<ChildProcess> exporter_;
  std::string last_curl_error_;
};

#ifndef HOSTPERF_CURL
#define SKIP_WITHOUT_CURL() GTEST_SKIP() << "curl not found at configure time"
#else
#define SKIP_WITHOUT_CURL() (void)0
#endif

TEST_F(WebSecurityTest, ScrapesOverTlsWithCacertAndRefusesPlainHttp) {
  SKIP_WITHOUT_CURL();
  const int port = Start("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  ASSERT_GT(port, 0) << exporter_->Stderr();
  EXPECT_EQ(Curl(port, {"--cacert", pki_.ca_cert.string()}), 200) << last_curl_error_;
  // Verified against the CA: a client trusting another CA refuses the server.
  EXPECT_LT(Curl(port, {"--cacert", pki_.other_ca_cert.string()}), 0);
  // TLS 1.3 and 1.2 both work with the default minimum (TLS12).
  EXPECT_EQ(Curl(port, {"--cacert", pki_.ca_cert.string(), "--tls-max", "1.2"}), 200) << last_curl_error_;
  const auto plain = HttpRequest(port, "GET", "/metrics");
  EXPECT_TRUE(!plain || plain->status != 200) << "plain HTTP answered on the TLS port";
  // Still serving after the bad client.
  EXPECT_EQ(Curl(port, {"--cacert", pki_.ca_cert.string()}), 200) << last_curl_error_;
}

TEST_F(WebSecurityTest, MinVersionTls13RefusesTls12Clients) {
  SKIP_WITHOUT_CURL();
  const int port = Start("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n");
  ASSERT_GT(port, 0) << exporter_->Stderr();
  EXPECT_LT(Curl(port, {"--cacert", pki_.ca_cert.string(), "--tls-max", "1.2"}), 0);
  EXPECT_EQ(Curl(port, {"--cacert", pki_.ca_cert.string()}), 200) << last_curl_error_;
}

TEST_F(WebSecurityTest, MutualTlsNeedsAClientCertificateFromTheCa) {
  SKIP_WITHOUT_CURL();
  const int port = Start(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: ca.crt\n"
      "  client_auth_type: RequireAndVerifyClientCert\n");
  ASSERT_GT(port, 0) << exporter_->Stderr();
  const std::string ca = pki_.ca_cert.string();
  EXPECT_LT(Curl(port, {"--cacert", ca}), 0) << "no client certificate must fail the handshake";
  EXPECT_EQ(Curl(port, {"--cacert", ca, "--cert", pki_.client_cert.string(), "--key", pki_.client_key.string()}), 200)
      << last_curl_error_;
  // A self-signed certificate from another CA is refused.
  EXPECT_LT(Curl(port, {"--cacert", ca, "--cert", pki_.other_ca_cert.string(), "--key", pki_.other_key.string()}), 0);
}

TEST_F(WebSecurityTest, ClientAuthChangeAppliesToNewConnectionsWithoutRestart) {
  SKIP_WITHOUT_CURL();
  const std::string tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
  const int port = Start(tls);
  ASSERT_GT(port, 0) << exporter_->Stderr();
  const std::string ca = pki_.ca_cert.string();
  EXPECT_EQ(Curl(port, {"--cacert", ca}), 200) << last_curl_error_;
  dir_.Write("web.yml.new", tls + "  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n");
  std::filesystem::rename(dir_.path() + "/web.yml.new", web_file_);
  ASSERT_TRUE(exporter_->WaitForStderr("web config reloaded", seconds(30))) << exporter_->Stderr();
  EXPECT_LT(Curl(port, {"--cacert", ca}), 0) << "the new policy needs a client certificate";
  EXPECT_EQ(Curl(port, {"--cacert", ca, "--cert", pki_.client_cert.string(), "--key", pki_.client_key.string()}), 200)
      << last_curl_error_;
}

TEST_F(WebSecurityTest, BasicAuthOnEveryEndpointAndNewUsersWithoutRestart) {
  const int port = Start(std::string("basic_auth_users:\n  alice: ") + kAliceHash + "\n");
  ASSERT_GT(port, 0) << exporter_->Stderr();
  for (const std::string path : {"/metrics", "/", "/-/healthy", "/-/ready", "/-/reload", "/api/v1/runs", "/nope"}) {
    auto anonymous = HttpRequest(port, "GET", path);
    ASSERT_TRUE(anonymous) << path;
    EXPECT_EQ(anonymous->status, 401) << path;
    EXPECT_THAT(anonymous->headers["www-authenticate"], HasSubstr("Basic realm=")) << path;
  }
  const auto wrong = HttpRequest(port, "GET", "/metrics", {{"Authorization", BasicAuthorization("alice", "bob-pw")}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  const auto right = HttpRequest(port, "GET", "/metrics", {{"Authorization", BasicAuthorization("alice", "alice-pw")}});
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  EXPECT_THAT(right->body, HasSubstr("hostperf_build_info"));
  // 7 anonymous requests and one wrong password so far.
  EXPECT_THAT(right->body, HasSubstr("\nhostperf_http_auth_failures_total 8\n"));
  EXPECT_THAT(right->body, HasSubstr("\nhostperf_web_config_last_reload_successful 1\n"));

  // Replace the file (write and rename, as config management does): bob
  // instead of alice, picked up by the watcher.
  dir_.Write("web.yml.new", std::string("basic_auth_users:\n  bob: ") + kBobHash + "\n");
  std::filesystem::rename(dir_.path() + "/web.yml.new", web_file_);
  ASSERT_TRUE(exporter_->WaitForStderr("web config reloaded", seconds(30))) << exporter_->Stderr();
  const auto bob = HttpRequest(port, "GET", "/metrics", {{"Authorization", BasicAuthorization("bob", "bob-pw")}});
  ASSERT_TRUE(bob);
  EXPECT_EQ(bob->status, 200);
  const auto alice = HttpRequest(port, "GET", "/metrics", {{"Authorization", BasicAuthorization("alice", "alice-pw")}});
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->status, 401);

  // A broken edit is logged and bob stays.
  dir_.Write("web.yml", "basic_auth_users:\n  bob: plaintext\n");
  ASSERT_TRUE(exporter_->WaitForStderr("web config reload failed", seconds(30))) << exporter_->Stderr();
  const auto still = HttpRequest(port, "GET", "/-/healthy", {{"Authorization", BasicAuthorization("bob", "bob-pw")}});
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
}

TEST_F(WebSecurityTest, TlsWithBasicAuth) {
  SKIP_WITHOUT_CURL();
  const int port = Start(std::string("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n") +
                         "basic_auth_users:\n  alice: " + kAliceHash + "\n");
  ASSERT_GT(port, 0) << exporter_->Stderr();
  const std::string ca = pki_.ca_cert.string();
  EXPECT_EQ(Curl(port, {"--cacert", ca}), 401);
  EXPECT_EQ(Curl(port, {"--cacert", ca, "-u", "alice:wrong"}), 401);
  EXPECT_EQ(Curl(port, {"--cacert", ca, "-u", "alice:alice-pw"}), 200) << last_curl_error_;
}

struct BadStart {
  std::string web_config;
  std::string message;  // after "hostperf_exporter: <dir>/web.yml"
};

TEST_F(WebSecurityTest, MalformedWebConfigRefusesToStartWithAClearMessage) {
  const std::vector<BadStart> cases = {
      {"basic_auth_users:\n  alice: hunter2\n", ":2:10: the password hash of user alice is not a bcrypt hash"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n",
       ": key_file " + pki_.other_key.string() + " does not match the certificate in " + pki_.server_cert.string()},
      {"tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n",
       ": cannot read cert_file " + dir_.path() + "/missing.crt: No such file or directory"},
      {"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS14\n",
       ":4:16: invalid min_version \"TLS14\""},
      {"basic_auth:\n  alice: x\n", ":1:1: unknown key \"basic_auth\""},
  };
  for (const auto& c : cases) {
    const std::string web = dir_.Write("web.yml", c.web_config);
    const auto result = RunCommand(
        HOSTPERF_EXPORTER_BIN,
        {"--config.file=" + config_, "--web.config.file=" + web, "--web.listen-address=127.0.0.1:0"}, seconds(30));
    EXPECT_EQ(result.status, 1) << c.web_config;
    EXPECT_THAT(result.err, HasSubstr("hostperf_exporter: " + web + c.message)) << c.web_config;
  }
  const auto missing =
      RunCommand(HOSTPERF_EXPORTER_BIN, {"--web.config.file=" + dir_.path() + "/none.yml"}, seconds(30));
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.err, HasSubstr(dir_.path() + "/none.yml: cannot read: No such file or directory"));
}

TEST_F(WebSecurityTest, ShippedExampleIsAccepted) {
  const auto result = RunCommand(
      HOSTPERF_EXPORTER_BIN,
      {"--web.config.file=" + std::string(HOSTPERF_SOURCE_DIR) + "/config/web-config.example.yml", "--config.check"},
      seconds(30));
  EXPECT_EQ(result.status, 0) << result.err;
}

}  // namespace
}  // namespace hostperf::testing
