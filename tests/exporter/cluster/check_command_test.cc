#include "hostperf/cluster/check_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hostperf::cluster {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The CLI's part, recorded: what ran here, the usage errors, the step line.
struct FakeCli {
  std::vector<std::string> ran;
  std::vector<std::string> usage_errors;
  std::vector<std::string> steps;
  int lines_made = 0;
  probes::ProbeOutcome memory =
      probes::ProbeOutcome::Success({{"kernels", {{{"kernel", "copy"}, {"best_bytes_per_second", 8e9}}}}});

  CheckCommandContext Context() {
    class RecordedLine final : public StepLine {
     public:
      explicit RecordedLine(std::vector<std::string>* steps) : steps_(steps) {}
      void Set(const std::string& step) override { steps_->push_back(step); }
      void Clear() override {}

     private:
      std::vector<std::string>* steps_;
    };
    CheckCommandContext context;
    context.config = std::make_shared<const config::Config>(probes::DefaultConfig());
    context.run_local = [this](const probes::ProbeModule& module, std::shared_ptr<const probes::ProbeOptions>) {
      ran.push_back(std::string(module.name));
      return memory;
    };
    context.usage_error = [this](const std::string& message) {
      usage_errors.push_back(message);
      return 2;
    };
    context.step_line = [this] {
      ++lines_made;
      return std::make_unique<RecordedLine>(&steps);
    };
    return context;
  }
};

int RunCheckCommand(FakeCli& cli, const std::vector<std::string>& args, std::string* out) {
  ::testing::internal::CaptureStdout();
  const int code = CheckCommand(args, cli.Context());
  *out = ::testing::internal::GetCapturedStdout();
  return code;
}

TEST(CheckCommandTest, HelpPrintsTheUsageAndRunsNothing) {
  FakeCli cli;
  std::string out;
  EXPECT_EQ(RunCheckCommand(cli, {"--help"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("usage: hostperf check [-d DIR]..."));
  EXPECT_THAT(cli.ran, IsEmpty());
  EXPECT_EQ(cli.lines_made, 0);
  EXPECT_THAT(std::string(CheckCommandSummary()), HasSubstr("check [-d DIR]... [-h HOST]..."));
}

TEST(CheckCommandTest, ABadOptionIsTheCLIsUsageError) {
  FakeCli cli;
  std::string out;
  EXPECT_EQ(RunCheckCommand(cli, {"-r", "x"}, &out), 2);
  ASSERT_EQ(cli.usage_errors.size(), 1u);
  EXPECT_THAT(out, IsEmpty());
  EXPECT_THAT(cli.ran, IsEmpty());
}

TEST(CheckCommandTest, ThisHostRunsInProcessAndTheResultBlockIsPrinted) {
  FakeCli cli;
  std::string out;
  EXPECT_EQ(RunCheckCommand(cli, {"-r", "s"}, &out), 0);
  EXPECT_EQ(cli.ran, std::vector<std::string>{"memory"});
  EXPECT_EQ(cli.lines_made, 1);
  EXPECT_THAT(out, HasSubstr("stream"));
  EXPECT_THAT(out, HasSubstr("8000.00"));  // 10^6 B/s, as STREAM
}

TEST(CheckCommandTest, JsonPutsTheFiguresAndErrorsOnStdoutAndAFailedTestExitsOne) {
  FakeCli cli;
  cli.memory = probes::ProbeOutcome::Failure("validation_failed", "array a wrong");
  std::string out;
  EXPECT_EQ(RunCheckCommand(cli, {"-r", "s", "--json"}, &out), 1);
  const json document = json::parse(out);
  ASSERT_EQ(document["errors"].size(), 1u);
  EXPECT_THAT(document["errors"][0].get<std::string>(), HasSubstr("array a wrong"));
}

}  // namespace
}  // namespace hostperf::cluster
