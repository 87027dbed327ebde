// The orchestration keys (orchestration.h): PEM files as openssl writes
// them, what is refused and why, and that a signature holds only for the
// connection, plan and peers it was made for.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/plan.h"
#include "hostperf/probes/net/remote.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {
namespace {

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/hostperf-orchestration-XXXXXX";
    path_ = ::mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text, mode_t mode) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    ::chmod(file.c_str(), mode);
    return file;
  }

 private:
  std::string path_;
};

// A key of `type` as openssl genpkey writes it: the private PEM (encrypted
// with `passphrase` when given) and the public PEM.
struct PemPair {
  std::string private_pem;
  std::string public_pem;
};
PemPair MakePem(int type, const char* passphrase = nullptr) {
  EVP_PKEY* key = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(type, nullptr);
  EVP_PKEY_keygen_init(ctx);
  if (type == EVP_PKEY_RSA) EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 1024);
  EVP_PKEY_keygen(ctx, &key);
  EVP_PKEY_CTX_free(ctx);
  const auto write = [&](bool is_private) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (is_private) {
      PEM_write_bio_PrivateKey(bio, key, passphrase ? EVP_aes_256_cbc() : nullptr, nullptr, 0, nullptr,
                               const_cast<char*>(passphrase));
    } else {
      PEM_write_bio_PUBKEY(bio, key);
    }
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<std::size_t>(length));
    BIO_free(bio);
    return text;
  };
  PemPair pair{write(true), write(false)};
  EVP_PKEY_free(key);
  return pair;
}

TEST(OrchestrationKeyTest, FilesAsOpensslWritesThemSignAndVerify) {
  TempDir dir;
  const PemPair pem = MakePem(EVP_PKEY_ED25519);
  const auto key = OrchestrationKey::FromPemFile(dir.Write("orchestration.key", pem.private_pem, 0600));
  ASSERT_TRUE(key) << key.error();
  const auto public_key = ReadOrchestrationPublicKeyFile(dir.Write("orchestration.pub", pem.public_pem, 0644));
  ASSERT_TRUE(public_key) << public_key.error();
  EXPECT_EQ(*public_key, key->public_key());

  Plan plan;
  plan.id = 42;
  plan.peer_count = 1;
  plan.duration_ms = 1000;
  plan.rate_bytes_per_second = 1 << 20;
  const std::vector<std::uint8_t> binding(32, 7);
  const std::vector<PlanPeer> peers = {ToPlanPeer(*ParseNumericAddress("10.0.0.2", 14159))};
  const PlanSignature signature = key->Sign(PlanSigningBytes(binding, plan, peers));
  EXPECT_TRUE(VerifyPlanSignature(*public_key, PlanSigningBytes(binding, plan, peers), signature));

  // Any change to what it covers breaks it.
  std::vector<std::uint8_t> other_binding = binding;
  other_binding[0] ^= 1;
  EXPECT_FALSE(VerifyPlanSignature(*public_key, PlanSigningBytes(other_binding, plan, peers), signature));
  Plan faster = plan;
  faster.rate_bytes_per_second *= 2;
  EXPECT_FALSE(VerifyPlanSignature(*public_key, PlanSigningBytes(binding, faster, peers), signature));
  const std::vector<PlanPeer> elsewhere = {ToPlanPeer(*ParseNumericAddress("10.0.0.3", 14159))};
  EXPECT_FALSE(VerifyPlanSignature(*public_key, PlanSigningBytes(binding, plan, elsewhere), signature));
  const auto stranger = OrchestrationKey::Generate();
  ASSERT_TRUE(stranger);
  EXPECT_FALSE(VerifyPlanSignature(stranger->public_key(), PlanSigningBytes(binding, plan, peers), signature));
}

TEST(OrchestrationKeyTest, UnusableFilesAreRefusedWithTheReason) {
  TempDir dir;
  const PemPair ed25519 = MakePem(EVP_PKEY_ED25519);
  // A private key readable by others, like a secret.
  auto refused = OrchestrationKey::FromPemFile(dir.Write("open.key", ed25519.private_pem, 0644));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.reason(), "no_orchestration_key");
  EXPECT_NE(refused.error().find("0644"), std::string::npos) << refused.error();
  // Not a key, an RSA key, an encrypted key (refused, never prompted for).
  refused = OrchestrationKey::FromPemFile(dir.Write("junk.key", "not a key\n", 0600));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("openssl genpkey -algorithm ed25519"), std::string::npos) << refused.error();
  const PemPair rsa = MakePem(EVP_PKEY_RSA);
  refused = OrchestrationKey::FromPemFile(dir.Write("rsa.key", rsa.private_pem, 0600));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("not an Ed25519"), std::string::npos) << refused.error();
  refused = OrchestrationKey::FromPemFile(
      dir.Write("encrypted.key", MakePem(EVP_PKEY_ED25519, "passphrase").private_pem, 0600));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().find("unencrypted"), std::string::npos) << refused.error();
  // Public keys: missing, not a key, RSA.
  EXPECT_FALSE(ReadOrchestrationPublicKeyFile(dir.Write("x", "", 0644) + ".missing"));
  const auto junk = ReadOrchestrationPublicKeyFile(dir.Write("junk.pub", ed25519.private_pem, 0600));
  ASSERT_FALSE(junk);
  EXPECT_NE(junk.error().find("no PEM public key"), std::string::npos) << junk.error();
  const auto rsa_public = ReadOrchestrationPublicKeyFile(dir.Write("rsa.pub", rsa.public_pem, 0644));
  ASSERT_FALSE(rsa_public);
  EXPECT_NE(rsa_public.error().find("not Ed25519"), std::string::npos) << rsa_public.error();
}

TEST(OrchestrationKeyTest, PublicKeyHexRoundTrip) {
  const auto key = OrchestrationKey::Generate();
  ASSERT_TRUE(key);
  const std::string hex = HexDigits(key->public_key());
  EXPECT_EQ(hex.size(), 64u);
  EXPECT_EQ(PublicKeyFromHex(hex), key->public_key());
  EXPECT_FALSE(PublicKeyFromHex(hex.substr(1)));
  EXPECT_FALSE(PublicKeyFromHex(std::string(63, '0') + "g"));
  EXPECT_FALSE(PublicKeyFromHex(std::string(64, 'A')));
}

// hostperf net --ssh: each bare host is given a secret nobody else holds,
// the public half of the run's key and the run-wide plan secret.
TEST(RunCredentialsTest, EachHostGetsASecretOfItsOwn) {
  const auto credentials = MakeRunCredentials(3);
  ASSERT_TRUE(credentials) << credentials.error();
  ASSERT_EQ(credentials->host_secrets.size(), 3u);
  std::set<Secret> distinct(credentials->host_secrets.begin(), credentials->host_secrets.end());
  distinct.insert(credentials->plan_secret);
  EXPECT_EQ(distinct.size(), 4u) << "the host secrets and the plan secret are all different";
  for (const Secret& secret : credentials->host_secrets) EXPECT_EQ(secret.size(), 64u);
  const std::string input = PeerInput(*credentials, 1);
  const std::string own(credentials->host_secrets[1].begin(), credentials->host_secrets[1].end());
  const std::string plan(credentials->plan_secret.begin(), credentials->plan_secret.end());
  EXPECT_EQ(input, own + "\n" + HexDigits(credentials->orchestration_key->public_key()) + "\n" + plan + "\n");
  for (const std::size_t other : {0u, 2u}) {
    const Secret& secret = credentials->host_secrets[other];
    EXPECT_EQ(input.find(std::string(secret.begin(), secret.end())), std::string::npos)
        << "host 1 is given host " << other << "'s secret";
  }
  // The private half never goes to a host: a run's key signs nothing a
  // second run's hosts take.
  const auto second = MakeRunCredentials(1);
  ASSERT_TRUE(second);
  EXPECT_NE(second->orchestration_key->public_key(), credentials->orchestration_key->public_key());
}

}  // namespace
}  // namespace hostperf::probes::net
