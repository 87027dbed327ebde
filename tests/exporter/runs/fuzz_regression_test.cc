// Inputs the fuzzers (tests/fuzz) found crashing or misbehaving, kept as unit
// tests so that the fix stays.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/runs/run_api.h"
#include "hostperf/runs/run_manager.h"

namespace hostperf::runs {
namespace {

using ::testing::HasSubstr;

class RunApiFuzzRegressionTest : public ::testing::Test {
 protected:
  RunApiFuzzRegressionTest() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hostperf-fuzz-regression-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    manager_ = std::make_unique<RunManager>(std::vector<probes::Probe*>{}, clock_, RunManagerHooks{},
                                            RunManagerOptions{dir_ / "runs.json"});
    api_ = std::make_unique<RunApi>(*manager_);
    api_->SetToken("token");
  }
  ~RunApiFuzzRegressionTest() override {
    api_.reset();
    manager_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  http::HttpResponse Post(const std::string& body) {
    http::HttpRequest request;
    request.method = "POST";
    request.path = std::string(kRunsPath);
    request.headers["authorization"] = "Bearer token";
    request.body = body;
    return api_->Handle(request);
  }

  std::filesystem::path dir_;
  RealClock clock_;
  std::unique_ptr<RunManager> manager_;
  std::unique_ptr<RunApi> api_;
};

// run_api_fuzzer: the parse error quotes the invalid byte, and serialising
// the error answer threw (HTTP 500 instead of 400).
TEST_F(RunApiFuzzRegressionTest, InvalidUtf8InTheBodyIsA400WithValidJson) {
  http::HttpResponse response;
  ASSERT_NO_THROW(response = Post("{\"probes\":[\"disk\"],\"duration\":\"\xff\"}"));
  EXPECT_EQ(response.status, 400);
  const auto answer = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(answer.is_object()) << response.body;
  EXPECT_THAT(answer.value("error", ""), HasSubstr("the body is not valid JSON"));
}

}  // namespace
}  // namespace hostperf::runs
