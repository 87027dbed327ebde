// libFuzzer target for the --web.config.file parser: any bytes as the YAML
// file. ParseWebConfig must never crash or throw; every refusal names the
// file; what it accepts holds only what the checks promise (bcrypt hashes,
// allowed one-line headers, TLS with both files under the file's directory).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "hostperf/http/web_config.h"

namespace {

constexpr const char* kFile = "/etc/hostperf/web.yml";

void CheckAccepted(const hostperf::http_security::WebConfig& config) {
  if (config.source != kFile) std::abort();
  for (const auto& [user, hash] : config.basic_auth_users) {
    if (user.empty() || user.find(':') != std::string::npos || !hostperf::http_security::IsBcryptHash(hash))
      std::abort();
  }
  for (const auto& [name, value] : config.headers) {
    if (value.empty() || value.find_first_of("\r\n") != std::string::npos) std::abort();
  }
  if (config.tls) {
    const auto& tls = *config.tls;
    if (tls.cert_file.empty() || tls.key_file.empty()) std::abort();
    if (!tls.cert_file.is_absolute() || !tls.key_file.is_absolute()) std::abort();
    if (tls.max_version != 0 && tls.max_version < tls.min_version) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto parsed = hostperf::http_security::ParseWebConfig(text, kFile);  // throws: a crash
  if (!parsed.ok()) {
    if (parsed.error().rfind(kFile, 0) != 0) std::abort();
    return 0;
  }
  CheckAccepted(*parsed);
  return 0;
}
