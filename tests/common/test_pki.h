#pragma once

// Test certificates made at test time with the openssl CLI (no secrets in the
// tree): a CA, a server certificate for 127.0.0.1/localhost and a client
// certificate signed by it, plus an unrelated key and a second CA. The server
// certificate also names 127.0.0.2 and 127.0.0.3 (hosts of the check tests).
#include <openssl/evp.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace hostperf::testing {

struct TestPki {
  std::filesystem::path dir;
  std::filesystem::path ca_cert, server_cert, server_key, client_cert, client_key, other_key, other_ca_cert;
  bool ok = false;
};

// An "Authorization: Basic ..." header value.
inline std::string BasicAuthorization(const std::string& user, const std::string& password) {
  const std::string plain = user + ":" + password;
  std::string encoded(4 * ((plain.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                reinterpret_cast<const unsigned char*>(plain.data()), static_cast<int>(plain.size()));
  encoded.resize(static_cast<std::size_t>(n));
  return "Basic " + encoded;
}

inline bool RunShell(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

// EC P-256 keys: fast to make.
inline TestPki MakeTestPki(const std::filesystem::path& dir) {
  TestPki pki;
  pki.dir = dir;
  pki.ca_cert = dir / "ca.crt";
  pki.server_cert = dir / "server.crt";
  pki.server_key = dir / "server.key";
  pki.client_cert = dir / "client.crt";
  pki.client_key = dir / "client.key";
  pki.other_key = dir / "other.key";
  pki.other_ca_cert = dir / "other-ca.crt";
  const std::string d = "'" + dir.string() + "'";
  const std::string key = "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ";
  const std::string ca =
      "openssl req -x509 -new -days 2 -subj /CN=hostperf-test-ca -addext basicConstraints=critical,CA:TRUE";
  const std::string sign = "openssl x509 -req -days 2 -CA " + d + "/ca.crt -CAkey " + d + "/ca.key -CAcreateserial";
  std::ofstream(dir / "server.ext")
      << "subjectAltName=IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3,DNS:localhost\n";  // closed here
  pki.ok = RunShell(key + d + "/ca.key") && RunShell(ca + " -key " + d + "/ca.key -out " + d + "/ca.crt") &&
           RunShell(key + d + "/server.key") &&
           RunShell("openssl req -new -subj /CN=localhost -key " + d + "/server.key -out " + d + "/server.csr") &&
           RunShell(sign + " -in " + d + "/server.csr -extfile " + d + "/server.ext -out " + d + "/server.crt") &&
           RunShell(key + d + "/client.key") &&
           RunShell("openssl req -new -subj /CN=prometheus -key " + d + "/client.key -out " + d + "/client.csr") &&
           RunShell(sign + " -in " + d + "/client.csr -out " + d + "/client.crt") && RunShell(key + d + "/other.key") &&
           RunShell(ca + " -key " + d + "/other.key -out " + d + "/other-ca.crt");
  return pki;
}

}  // namespace hostperf::testing
