#include "hostperf/http/web_config.h"

#include <crypt.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../../common/test_pki.h"
#include "../../probes/temp_dir.h"
#include "hostperf/http/web_security.h"

namespace hostperf::http_security {
namespace {

using probes::test_support::TempDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A bcrypt hash made now with libcrypt, at the lowest cost to keep tests fast.
std::string Bcrypt(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof(salt)) == nullptr) return "";
  auto data = std::make_unique<crypt_data>();
  const char* hash = crypt_r(password.c_str(), salt, data.get());
  return hash != nullptr ? hash : "";
}

std::string WriteFile(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path, std::ios::trunc) << content;
  return path.string();
}

// --- ParseWebConfig: valid files -------------------------------------------

TEST(WebConfigParse, EmptyFileMeansPlainHttpWithoutAuth) {
  const auto config = ParseWebConfig("", "/etc/web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_FALSE(config->tls);
  EXPECT_TRUE(config->basic_auth_users.empty());
  EXPECT_EQ(config->source, "/etc/web.yml");
}

TEST(WebConfigParse, ReadsEveryKeyAndResolvesRelativePathsAgainstTheFile) {
  const std::string hash = "$2y$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m";
  const auto config = ParseWebConfig(
      "tls_server_config:\n"
      "  cert_file: tls/server.crt\n"
      "  key_file: /abs/server.key\n"
      "  client_ca_file: ca.crt\n"
      "  client_auth_type: VerifyClientCertIfGiven\n"
      "  min_version: TLS13\n"
      "  max_version: TLS13\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    Strict-Transport-Security: max-age=31536000\n"
      "    X-Frame-Options: deny\n"
      "basic_auth_users:\n"
      "  alice: " +
          hash +
          "\n"
          "  bob: " +
          hash + "\n",
      "/etc/hostperf/web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  ASSERT_TRUE(config->tls);
  EXPECT_EQ(config->tls->cert_file, "/etc/hostperf/tls/server.crt");
  EXPECT_EQ(config->tls->key_file, "/abs/server.key");
  EXPECT_EQ(config->tls->client_ca_file, "/etc/hostperf/ca.crt");
  EXPECT_EQ(config->tls->client_auth_type, ClientAuthType::kVerifyClientCertIfGiven);
  EXPECT_EQ(config->tls->min_version, TLS1_3_VERSION);
  EXPECT_EQ(config->tls->max_version, TLS1_3_VERSION);
  ASSERT_EQ(config->headers.size(), 2u);
  EXPECT_EQ(config->headers[0].first, "Strict-Transport-Security");
  EXPECT_EQ(config->headers[0].second, "max-age=31536000");
  EXPECT_EQ(config->basic_auth_users.size(), 2u);
  EXPECT_EQ(config->basic_auth_users.at("alice"), hash);
}

TEST(WebConfigParse, DefaultsToTls12AndNoClientCert) {
  const auto config = ParseWebConfig("tls_server_config: {cert_file: a.crt, key_file: a.key}\n", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->tls->min_version, TLS1_2_VERSION);
  EXPECT_EQ(config->tls->max_version, 0);
  EXPECT_EQ(config->tls->client_auth_type, ClientAuthType::kNoClientCert);
  EXPECT_EQ(config->tls->cert_file, "a.crt");  // the file has no directory part
}

TEST(WebConfigParse, ForwardSecretAeadSuitesByDefaultAndExporterToolkitKeys) {
  const auto defaults = ParseWebConfig("tls_server_config:\n  cert_file: a\n  key_file: b\n", "/etc/web.yml");
  ASSERT_TRUE(defaults.ok()) << defaults.error();
  const std::string list = defaults->tls->cipher_list;
  EXPECT_EQ(list.find("CBC"), std::string::npos);
  EXPECT_EQ(list.find("-SHA:"), std::string::npos);
  for (std::size_t start = 0; start < list.size();) {
    const std::size_t end = std::min(list.find(':', start), list.size());
    EXPECT_EQ(list.compare(start, 6, "ECDHE-"), 0) << list.substr(start, end - start);
    start = end + 1;
  }
  EXPECT_TRUE(defaults->tls->prefer_server_cipher_suites);

  const auto set = ParseWebConfig(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n"
      "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_CBC_SHA]\n"
      "  curve_preferences: [CurveP384, X25519]\n  prefer_server_cipher_suites: false\n",
      "/etc/web.yml");
  ASSERT_TRUE(set.ok()) << set.error();
  EXPECT_EQ(set->tls->cipher_list, "ECDHE-RSA-AES256-GCM-SHA384:AES128-SHA");  // TLS 1.3 names: not configurable
  EXPECT_EQ(set->tls->groups, "P-384:X25519");
  EXPECT_FALSE(set->tls->prefer_server_cipher_suites);
}

TEST(BcryptLimiter, BoundsChecksPerSourceAndOverall) {
  BcryptLimiter::Limits limits;
  limits.source_burst = 2;
  limits.source_per_second = 1;
  limits.global_burst = 3;
  limits.global_per_second = 2;
  limits.max_sources = 2;
  limits.refusal_delay = std::chrono::milliseconds(0);
  BcryptLimiter limiter(limits);
  auto t = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  EXPECT_TRUE(limiter.Admit("a", t));
  EXPECT_TRUE(limiter.Admit("a", t));
  EXPECT_FALSE(limiter.Admit("a", t)) << "source burst spent";
  EXPECT_TRUE(limiter.Admit("b", t));
  EXPECT_FALSE(limiter.Admit("b", t)) << "global burst spent";
  EXPECT_FALSE(limiter.Admit("c", t)) << "no room for a third source while both buckets are low";
  t += std::chrono::seconds(1);  // +1 token for each source, +2 globally
  EXPECT_TRUE(limiter.Admit("a", t));
  EXPECT_TRUE(limiter.Admit("b", t));
  EXPECT_FALSE(limiter.Admit("a", t));
  t += std::chrono::seconds(10);  // every bucket full again: forgotten to make room
  EXPECT_TRUE(limiter.Admit("c", t));
}

TEST(WebConfigParse, OnlyMaxVersionBelowTheDefaultMinimumLowersTheMinimum) {
  const auto config =
      ParseWebConfig("tls_server_config: {cert_file: a.crt, key_file: a.key, max_version: TLS11}\n", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->tls->min_version, TLS1_1_VERSION);
  EXPECT_EQ(config->tls->max_version, TLS1_1_VERSION);
}

TEST(WebConfigParse, EveryClientAuthTypeIsKnown) {
  for (const auto& [name, type] : std::map<std::string, ClientAuthType>{
           {"NoClientCert", ClientAuthType::kNoClientCert},
           {"RequestClientCert", ClientAuthType::kRequestClientCert},
           {"RequireAnyClientCert", ClientAuthType::kRequireAnyClientCert},
           {"VerifyClientCertIfGiven", ClientAuthType::kVerifyClientCertIfGiven},
           {"RequireAndVerifyClientCert", ClientAuthType::kRequireAndVerifyClientCert}}) {
    const std::string ca = type == ClientAuthType::kNoClientCert ? "" : ", client_ca_file: ca.crt";
    const auto config = ParseWebConfig(
        "tls_server_config: {cert_file: a.crt, key_file: a.key, client_auth_type: " + name + ca + "}\n", "w.yml");
    ASSERT_TRUE(config.ok()) << name << ": " << config.error();
    EXPECT_EQ(config->tls->client_auth_type, type) << name;
  }
}

// --- ParseWebConfig: every malformed case, with its message ----------------

struct BadCase {
  std::string yaml;
  std::string message;  // exact
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.message; }

class WebConfigRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(WebConfigRejects, WithExactMessage) {
  const auto config = ParseWebConfig(GetParam().yaml, "/etc/web.yml");
  ASSERT_FALSE(config.ok()) << GetParam().yaml;
  EXPECT_EQ(config.error(), GetParam().message);
}

const std::string kTls = "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n";

INSTANTIATE_TEST_SUITE_P(
    Table, WebConfigRejects,
    ::testing::Values(
        BadCase{"tls_server_config: [\n", "/etc/web.yml:2:1: invalid YAML: end of sequence flow not found"},
        BadCase{"- a\n- b\n", "/etc/web.yml:1:1: expected a mapping at the top level"},
        BadCase{"tls_config: {}\n",
                "/etc/web.yml:1:1: unknown key \"tls_config\"; expected tls_server_config, http_server_config, "
                "basic_auth_users"},
        BadCase{"tls_server_config: yes\n", "/etc/web.yml:1:20: tls_server_config must be a mapping"},
        BadCase{kTls + "  cert_fil: b\n", "/etc/web.yml:4:3: unknown key tls_server_config.cert_fil"},
        BadCase{kTls + "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ECDHE-RSA-AES128-GCM-SHA256]\n",
                "/etc/web.yml:4:58: tls_server_config.cipher_suites: unknown name \"ECDHE-RSA-AES128-GCM-SHA256\"; "
                "expected Go's crypto/tls names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
        BadCase{kTls + "  cipher_suites: TLS_RSA_WITH_AES_128_CBC_SHA\n",
                "/etc/web.yml:4:18: tls_server_config.cipher_suites must be a non-empty list"},
        BadCase{kTls + "  curve_preferences: [X25519, P-256]\n",
                "/etc/web.yml:4:31: tls_server_config.curve_preferences: unknown name \"P-256\"; expected one of "
                "CurveP256, CurveP384, CurveP521, X25519"},
        BadCase{kTls + "  prefer_server_cipher_suites: sometimes\n",
                "/etc/web.yml:4:32: prefer_server_cipher_suites must be true or false"},
        BadCase{kTls + "  client_allowed_sans: [a]\n",
                "/etc/web.yml:4:3: tls_server_config.client_allowed_sans is not supported by hostperf_exporter"},
        BadCase{kTls + "  key_file: [a]\n", "/etc/web.yml:4:13: tls_server_config.key_file must be a string"},
        BadCase{"tls_server_config:\n  key_file: a.key\n", "/etc/web.yml:2:3: tls_server_config needs cert_file"},
        BadCase{"tls_server_config:\n  cert_file: a.crt\n", "/etc/web.yml:2:3: tls_server_config needs key_file"},
        BadCase{kTls + "  client_auth_type: RequireCert\n",
                "/etc/web.yml:4:21: invalid client_auth_type \"RequireCert\"; expected one of NoClientCert, "
                "RequestClientCert, RequireAndVerifyClientCert, RequireAnyClientCert, VerifyClientCertIfGiven"},
        BadCase{kTls + "  min_version: TLS1.2\n",
                "/etc/web.yml:4:16: invalid min_version \"TLS1.2\"; expected one of TLS10, TLS11, TLS12, TLS13"},
        BadCase{kTls + "  max_version: SSL3\n",
                "/etc/web.yml:4:16: invalid max_version \"SSL3\"; expected one of TLS10, TLS11, TLS12, TLS13"},
        BadCase{kTls + "  min_version: TLS13\n  max_version: TLS12\n",
                "/etc/web.yml:2:3: tls_server_config: max_version is lower than min_version"},
        BadCase{kTls + "  client_auth_type: RequireAndVerifyClientCert\n",
                "/etc/web.yml:2:3: client_auth_type verifies client certificates but client_ca_file is not set"},
        BadCase{kTls + "  client_ca_file: ca.crt\n",
                "/etc/web.yml:2:3: client_ca_file is set but client_auth_type is NoClientCert: set client_auth_type "
                "(e.g. RequireAndVerifyClientCert) or remove client_ca_file"},
        BadCase{"http_server_config:\n  http3: true\n", "/etc/web.yml:2:3: unknown key http_server_config.http3"},
        BadCase{"http_server_config:\n  http2: maybe\n", "/etc/web.yml:2:10: http2 must be true or false"},
        BadCase{"http_server_config:\n  headers:\n    Server: hostperf\n",
                "/etc/web.yml:3:5: header \"Server\" cannot be set; allowed: Strict-Transport-Security, "
                "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, Content-Security-Policy"},
        BadCase{"http_server_config:\n  headers:\n    X-Frame-Options: \"\"\n",
                "/etc/web.yml:3:22: header X-Frame-Options needs a one-line, non-empty value"},
        BadCase{"basic_auth_users: [alice]\n",
                "/etc/web.yml:1:19: basic_auth_users must be a mapping of user: bcrypt hash"},
        BadCase{"basic_auth_users:\n  alice: secret\n",
                "/etc/web.yml:2:10: the password hash of user alice is not a bcrypt hash ($2y$<cost>$...; make one "
                "with htpasswd -nBC 10 \"\" | tr -d ':\\n')"},
        BadCase{"basic_auth_users:\n  alice: $1$abc$0123456789012345678901\n",
                "/etc/web.yml:2:10: the password hash of user alice is not a bcrypt hash ($2y$<cost>$...; make one "
                "with htpasswd -nBC 10 \"\" | tr -d ':\\n')"},
        BadCase{"basic_auth_users:\n  \"a:b\": $2y$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m\n",
                "/etc/web.yml:2:3: basic_auth_users: user name \"a:b\" is empty or has a ':'"}));

TEST(WebConfigRead, MissingFileNamesItAndTheReason) {
  const auto config = ReadWebConfig("/nonexistent/hostperf-web.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), "/nonexistent/hostperf-web.yml: cannot read: No such file or directory");
}

// --- bcrypt ------------------------------------------------------------------

TEST(Bcrypt, RecognisesBcryptHashesOnly) {
  EXPECT_TRUE(IsBcryptHash("$2y$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m"));
  EXPECT_TRUE(IsBcryptHash("$2a$04$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m"));
  EXPECT_TRUE(IsBcryptHash(Bcrypt("x")));
  EXPECT_FALSE(IsBcryptHash(""));
  EXPECT_FALSE(IsBcryptHash("$2y$03$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m"));  // cost
  EXPECT_FALSE(IsBcryptHash("$2y$32$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m"));
  EXPECT_FALSE(IsBcryptHash("$2x$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m"));  // buggy variant
  EXPECT_FALSE(IsBcryptHash("$2y$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4"));   // short
  EXPECT_FALSE(IsBcryptHash("$2y$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4!"));  // alphabet
  EXPECT_FALSE(IsBcryptHash("$6$rounds=5000$abcdefgh$0123456789012345678901234567890123456789012"));
}

TEST(Bcrypt, VerifiesAFixtureHashAndOneMadeNow) {
  // Made with Python's crypt module (libcrypt), password "secret", cost 10.
  const std::string fixture = "$2b$10$4z9p02ZbdbmzRLbEcN.G2e7QPvXUG8mG11gyEj5FoB0f4Sg5elb4m";
  EXPECT_TRUE(VerifyBcrypt("secret", fixture));
  EXPECT_FALSE(VerifyBcrypt("Secret", fixture));
  EXPECT_FALSE(VerifyBcrypt("", fixture));
  const std::string fresh = Bcrypt("correct horse");
  ASSERT_TRUE(IsBcryptHash(fresh)) << fresh;
  EXPECT_TRUE(VerifyBcrypt("correct horse", fresh));
  EXPECT_FALSE(VerifyBcrypt("correct horse ", fresh));
  EXPECT_FALSE(VerifyBcrypt("correct horse", "not a hash"));
}

TEST(CredentialCache, RemembersExactTriplesAndStaysBounded) {
  CredentialCache cache(3);
  cache.Insert("alice", "pw", "hash1");
  EXPECT_TRUE(cache.Contains("alice", "pw", "hash1"));
  EXPECT_FALSE(cache.Contains("alice", "pw2", "hash1"));
  EXPECT_FALSE(cache.Contains("alice", "pw", "hash2"));  // a changed hash needs bcrypt again
  EXPECT_FALSE(cache.Contains("alicepw", "", "hash1"));  // no ambiguity from concatenation
  cache.Insert("b", "pw", "h");
  cache.Insert("c", "pw", "h");
  EXPECT_EQ(cache.size(), 3u);
  cache.Insert("d", "pw", "h");
  EXPECT_LE(cache.size(), 3u);
  EXPECT_TRUE(cache.Contains("d", "pw", "h"));
}

// --- TLS contexts --------------------------------------------------------------

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = hostperf::testing::MakeTestPki(dir_.path());
    ASSERT_TRUE(pki_.ok) << "openssl CLI failed";
  }
  TlsServerConfig Tls() const {
    TlsServerConfig tls;
    tls.cert_file = pki_.server_cert;
    tls.key_file = pki_.server_key;
    return tls;
  }
  TempDir dir_;
  hostperf::testing::TestPki pki_;
};

TEST_F(TlsContextTest, BuildsWithMatchingCertAndKeyAndClientCa) {
  auto tls = Tls();
  tls.client_ca_file = pki_.ca_cert;
  tls.client_auth_type = ClientAuthType::kRequireAndVerifyClientCert;
  tls.min_version = TLS1_3_VERSION;
  const auto context = BuildTlsContext(tls, "web.yml");
  ASSERT_TRUE(context.ok()) << context.error();
  SSL_CTX* ctx = context->get();
  EXPECT_EQ(SSL_CTX_get_verify_mode(ctx), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT);
  EXPECT_EQ(SSL_CTX_get_min_proto_version(ctx), TLS1_3_VERSION);
  ASSERT_NE(SSL_CTX_get_client_CA_list(ctx), nullptr);
  EXPECT_EQ(sk_X509_NAME_num(SSL_CTX_get_client_CA_list(ctx)), 1);
}

TEST_F(TlsContextTest, RejectsAKeyThatDoesNotMatchTheCertificate) {
  auto tls = Tls();
  tls.key_file = pki_.other_key;
  const auto context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.error(), "web.yml: key_file " + pki_.other_key.string() + " does not match the certificate in " +
                                 pki_.server_cert.string());
}

// A FIFO named as the key would make OpenSSL wait for a writer: start-up or a
// reload would hang. It is refused at once, as are directories.
TEST_F(TlsContextTest, RejectsAFifoOrADirectoryWithoutBlocking) {
  auto tls = Tls();
  tls.key_file = dir_.path() / "key.fifo";
  ASSERT_EQ(::mkfifo(tls.key_file.c_str(), 0600), 0);
  auto context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.error(), "web.yml: key_file " + tls.key_file.string() + " is not a regular file");

  tls = Tls();
  tls.client_ca_file = dir_.path();
  context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.error(), "web.yml: client_ca_file " + dir_.path().string() + " is not a regular file");
}

TEST_F(TlsContextTest, RejectsMissingAndGarbageFiles) {
  auto tls = Tls();
  tls.cert_file = dir_.path() / "missing.crt";
  auto context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_EQ(context.error(),
            "web.yml: cannot read cert_file " + tls.cert_file.string() + ": No such file or directory");

  tls = Tls();
  tls.key_file = WriteFile(dir_.path() / "garbage.key", "not a key\n");
  context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_THAT(context.error(), StartsWith("web.yml: key_file " + tls.key_file.string() + ": "));

  tls = Tls();
  tls.cert_file = pki_.server_key;  // a key where the certificate belongs
  context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_THAT(context.error(), StartsWith("web.yml: cert_file " + tls.cert_file.string() + ": "));

  tls = Tls();
  tls.client_ca_file = WriteFile(dir_.path() / "empty-ca.crt", "");
  tls.client_auth_type = ClientAuthType::kRequireAndVerifyClientCert;
  context = BuildTlsContext(tls, "web.yml");
  ASSERT_FALSE(context.ok());
  EXPECT_THAT(context.error(), StartsWith("web.yml: client_ca_file " + tls.client_ca_file.string()));
}

// --- WebSecurity: the live config ----------------------------------------------

http::HttpRequest WithAuthorization(const std::string& value) {
  http::HttpRequest request;
  request.method = "GET";
  request.path = "/metrics";
  if (!value.empty()) request.headers["authorization"] = value;
  return request;
}

// base64 of "user:password" via OpenSSL, as a client would send it.
class WebSecurityTest : public ::testing::Test {
 protected:
  std::filesystem::path Write(const std::string& content) { return WriteFile(dir_.path() / "web.yml", content); }
  TempDir dir_;
};

TEST_F(WebSecurityTest, BasicAuthGatesWithChallengeAndCachesSuccess) {
  const auto path = Write("basic_auth_users:\n  alice: " + Bcrypt("s3cret") + "\n");
  auto security = WebSecurity::Load(path);
  ASSERT_TRUE(security.ok()) << security.error();
  WebSecurity& web = **security;
  EXPECT_FALSE(web.tls_enabled());

  const std::vector<std::string> bad = {"",
                                        hostperf::testing::BasicAuthorization("alice", "wrong"),
                                        hostperf::testing::BasicAuthorization("mallory", "s3cret"),
                                        "Bearer abc",
                                        "Basic !!!!",
                                        "Basic YWxpY2U="};
  for (const std::string& header : bad) {
    const auto denied = web.Authorize(WithAuthorization(header));
    ASSERT_TRUE(denied) << header;
    EXPECT_EQ(denied->status, 401) << header;
    ASSERT_EQ(denied->headers.size(), 1u);
    EXPECT_EQ(denied->headers[0].first, "WWW-Authenticate");
    EXPECT_THAT(denied->headers[0].second, StartsWith("Basic realm="));
  }
  EXPECT_EQ(web.auth_failures(), 6u);
  EXPECT_EQ(web.cache().size(), 0u);

  EXPECT_FALSE(web.Authorize(WithAuthorization(hostperf::testing::BasicAuthorization("alice", "s3cret"))));
  EXPECT_EQ(web.cache().size(), 1u);
  EXPECT_FALSE(web.Authorize(WithAuthorization(
      "basic " + hostperf::testing::BasicAuthorization("alice", "s3cret").substr(6))));  // scheme case
  EXPECT_EQ(web.cache().size(), 1u);
  EXPECT_EQ(web.auth_failures(), 6u);
}

TEST_F(WebSecurityTest, WithoutUsersEveryRequestPasses) {
  auto security = WebSecurity::Load(Write("http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"));
  ASSERT_TRUE(security.ok()) << security.error();
  EXPECT_FALSE((*security)->Authorize(WithAuthorization("")));
  const auto headers = (*security)->ResponseHeaders();
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers[0].second, "nosniff");
}

TEST_F(WebSecurityTest, ReloadSwapsUsersAndKeepsTheOldConfigOnErrors) {
  const auto path = Write("basic_auth_users:\n  alice: " + Bcrypt("a") + "\n");
  auto security = WebSecurity::Load(path);
  ASSERT_TRUE(security.ok()) << security.error();
  WebSecurity& web = **security;
  EXPECT_TRUE(web.Authorize(WithAuthorization(hostperf::testing::BasicAuthorization("bob", "b"))));

  Write("basic_auth_users:\n  bob: " + Bcrypt("b") + "\n");
  ASSERT_TRUE(web.Reload().ok());
  EXPECT_FALSE(web.Authorize(WithAuthorization(hostperf::testing::BasicAuthorization("bob", "b"))));
  EXPECT_TRUE(web.Authorize(WithAuthorization(hostperf::testing::BasicAuthorization("alice", "a"))));

  Write("basic_auth_users:\n  bob: plaintext\n");
  const auto failed = web.Reload();
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.error(), HasSubstr("is not a bcrypt hash"));
  EXPECT_FALSE(web.Authorize(
      WithAuthorization(hostperf::testing::BasicAuthorization("bob", "b"))));  // the old users still apply

  const auto families = web.Collect();
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].name, "hostperf_http_auth_failures_total");
  EXPECT_EQ(families[0].metric.at(0).counter.value, 2);  // bob before he existed, alice after she was removed
  EXPECT_EQ(families[1].name, "hostperf_web_config_last_reload_successful");
  EXPECT_EQ(families[1].metric.at(0).gauge.value, 0);
  Write("basic_auth_users:\n  bob: " + Bcrypt("b") + "\n");
  ASSERT_TRUE(web.Reload().ok());
  EXPECT_EQ(web.Collect()[1].metric.at(0).gauge.value, 1);
}

TEST_F(WebSecurityTest, ReloadRefusesToSwitchTlsOnOrOff) {
  const auto pki = hostperf::testing::MakeTestPki(dir_.path());
  ASSERT_TRUE(pki.ok);
  const auto path = Write("basic_auth_users: {}\n");
  auto security = WebSecurity::Load(path);
  ASSERT_TRUE(security.ok()) << security.error();
  Write("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  const auto reloaded = (*security)->Reload();
  ASSERT_FALSE(reloaded.ok());
  EXPECT_EQ(reloaded.error(), path.string() +
                                  ": tls_server_config was added; switching TLS on or off needs a restart of "
                                  "hostperf_exporter");
  EXPECT_FALSE((*security)->tls_enabled());
}

TEST_F(WebSecurityTest, WatcherPicksUpAChangedFile) {
  const auto path = Write("basic_auth_users:\n  alice: " + Bcrypt("a") + "\n");
  auto security = WebSecurity::Load(path);
  ASSERT_TRUE(security.ok()) << security.error();
  WebSecurity& web = **security;
  web.StartWatching(std::chrono::milliseconds(20));
  // Write elsewhere and rename: the inode changes even within one mtime tick.
  WriteFile(dir_.path() / "next.yml", "basic_auth_users:\n  bob: " + Bcrypt("b") + "\n");
  std::filesystem::rename(dir_.path() / "next.yml", path);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (web.Authorize(WithAuthorization(hostperf::testing::BasicAuthorization("bob", "b"))) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(web.Authorize(WithAuthorization(hostperf::testing::BasicAuthorization("bob", "b"))));
}

TEST_F(WebSecurityTest, LoadFailsWithTheFilesMessage) {
  const auto path = Write("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  const auto security = WebSecurity::Load(path);
  ASSERT_FALSE(security.ok());
  EXPECT_EQ(security.error(), path.string() + ": cannot read cert_file " + (dir_.path() / "server.crt").string() +
                                  ": No such file or directory");
}

}  // namespace
}  // namespace hostperf::http_security
