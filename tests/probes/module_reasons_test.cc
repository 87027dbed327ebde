// Each module's declared failure and skip reasons become label values of
// hostperf_probe_failures_total / hostperf_probe_skipped_total at 0.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include "hostperf/base/files.h"
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

// The reasons of a "| failures (...) | `a`, `b` |" or "| skips (...) | none |"
// row of a probe's page; nullopt without such a row.
std::optional<std::set<std::string>> DocumentedReasons(const std::string& page, const std::string& row) {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| " + row + " ", 0) != 0) continue;
    const std::string cell = line.substr(line.find('|', 2));
    std::set<std::string> reasons;
    const std::regex quoted("`([^`]+)`");
    for (std::sregex_iterator it(cell.begin(), cell.end(), quoted), end; it != end; ++it) reasons.insert((*it)[1]);
    return reasons;
  }
  return std::nullopt;
}

// Each registered module's page (probes/<name>/metrics.md) lists exactly the
// reasons it declares, in its "Reasons" table.
TEST(ModuleReasonsTest, EveryModuleDeclaresTheReasonsItsPageDocuments) {
  ASSERT_FALSE(AllProbes().empty());
  for (const ProbeModule* module : AllProbes()) {
    const std::string path = std::string(HOSTPERF_SOURCE_DIR) + "/probes/" + std::string(module->name) + "/metrics.md";
    SCOPED_TRACE(path);
    const auto read = hostperf::ReadFile(path);
    ASSERT_TRUE(read) << "no metrics page";
    const std::string& page = *read;
    const auto failures = DocumentedReasons(page, "failures");
    const auto skips = DocumentedReasons(page, "skips");
    ASSERT_TRUE(failures && skips) << "no \"| failures ... |\" and \"| skips ... |\" rows";
    EXPECT_EQ(*failures, std::set<std::string>(module->failure_reasons.begin(), module->failure_reasons.end()));
    EXPECT_EQ(*skips, std::set<std::string>(module->skip_reasons.begin(), module->skip_reasons.end()));
  }
}

}  // namespace
}  // namespace hostperf::probes
