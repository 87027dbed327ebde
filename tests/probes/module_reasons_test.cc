// Each module's declared failure and skip reasons become label values of
// hostperf_probe_failures_total / hostperf_probe_skipped_total at 0.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>

#include "hostperf/probes/probe.h"

namespace hostperf::probes {
namespace {

// The snake_case reasons the docs promise: a-z first, then a-z, 0-9 and _,
// and at most 64 characters.
bool ValidReason(std::string_view reason) {
  if (reason.empty() || reason.size() > 64 || reason.front() < 'a' || reason.front() > 'z') return false;
  for (const char c : reason) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

TEST(ModuleReasonsTest, ValidatorRejectsWhatIsNotALabelValueWeWant) {
  EXPECT_TRUE(ValidReason("no_space"));
  EXPECT_FALSE(ValidReason(""));
  EXPECT_FALSE(ValidReason("No space"));
  EXPECT_FALSE(ValidReason("_x"));
  EXPECT_FALSE(ValidReason("io-error"));
}

TEST(ModuleReasonsTest, EveryDeclaredReasonIsAValidUniqueLabelValue) {
  for (const ProbeModule* module : AllProbes()) {
    SCOPED_TRACE(std::string(module->name));
    for (const auto* reasons : {&module->failure_reasons, &module->skip_reasons}) {
      std::set<std::string_view> seen;
      for (const std::string_view reason : *reasons) {
        EXPECT_TRUE(ValidReason(reason)) << '"' << reason << '"';
        EXPECT_TRUE(seen.insert(reason).second) << "declared twice: " << reason;
      }
    }
  }
}

TEST(ModuleReasonsTest, BuiltInModulesDeclareTheirDocumentedReasons) {
  const auto declared = [](std::string_view probe, bool failures) {
    const ProbeModule* module = FindProbe(probe);
    std::set<std::string_view> out;
    if (module == nullptr) return out;
    const auto& list = failures ? module->failure_reasons : module->skip_reasons;
    out.insert(list.begin(), list.end());
    return out;
  };
  EXPECT_TRUE(declared("cpu", true).contains("checksum_mismatch"));
  EXPECT_TRUE(declared("memory", true).contains("validation_failed"));
  EXPECT_TRUE(declared("disk", true).contains("verify_error"));
  EXPECT_TRUE(declared("disk", false).contains("no_space"));
  EXPECT_TRUE(declared("net", true).contains("all_peers_down"));
  EXPECT_TRUE(declared("net", false).contains("no_peers"));
}

}  // namespace
}  // namespace hostperf::probes
