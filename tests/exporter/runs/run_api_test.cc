#include "hostperf/runs/run_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "hostperf/base/clock.h"
#include "hostperf/runs/run_manager.h"

namespace hostperf::runs {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kToken = "s3cret-token";

TEST(TokensEqualTest, ComparesWholeTokens) {
  EXPECT_TRUE(TokensEqual("abc", "abc"));
  EXPECT_FALSE(TokensEqual("abd", "abc"));
  EXPECT_FALSE(TokensEqual("ab", "abc"));
  EXPECT_FALSE(TokensEqual("abcd", "abc"));
  EXPECT_FALSE(TokensEqual("", "abc"));
}

class TokenFileTest : public ::testing::Test {
 protected:
  TokenFileTest() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hostperf-token-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  }
  ~TokenFileTest() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::filesystem::path Write(const std::string& content) {
    const auto path = dir_ / "token";
    std::ofstream(path) << content;
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(TokenFileTest, TrimsSurroundingWhitespace) {
  const auto token = ReadApiToken(Write("  abc123\n"));
  ASSERT_TRUE(token) << token.error();
  EXPECT_EQ(*token, "abc123");
}

TEST_F(TokenFileTest, MissingEmptyOrSpacedTokensAreErrors) {
  const auto missing = ReadApiToken(dir_ / "nope");
  ASSERT_FALSE(missing);
  EXPECT_THAT(missing.error(), HasSubstr("api.token_file: \"" + (dir_ / "nope").string() + "\": cannot read"));
  const auto empty = ReadApiToken(Write(" \n"));
  ASSERT_FALSE(empty);
  EXPECT_THAT(empty.error(), HasSubstr("is empty"));
  EXPECT_FALSE(ReadApiToken(Write("two words\n")));
}

// A probe that finishes at once.
class InstantProbe final : public probes::Probe {
 public:
  std::string_view Name() const override { return "cpu"; }
  probes::ProbeOutcome MeasureScheduled(const probes::ScheduledContext&) override { return Instant(); }
  probes::ProbeOutcome MeasureFull(const probes::FullRunContext&) override { return Instant(); }
  static probes::ProbeOutcome Instant() { return probes::ProbeOutcome::Success({{"ok", 1}}); }
};

class RunApiTest : public ::testing::Test {
 protected:
  RunApiTest() : manager_({&probe_}, clock_, {}, {}), api_(manager_) {}

  http::HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                          const std::string& token = kToken) {
    http::HttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    if (!token.empty()) request.headers["authorization"] = "Bearer " + token;
    return api_.Handle(request);
  }

  std::string Header(const http::HttpResponse& response, const std::string& name) {
    for (const auto& [key, value] : response.headers) {
      if (key == name) return value;
    }
    return "";
  }

  RealClock clock_;
  InstantProbe probe_;
  RunManager manager_;
  RunApi api_;
};

TEST_F(RunApiTest, DisabledWithoutATokenSaysHowToEnableIt) {
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/api/v1/runs"}, {"POST", "/api/v1/runs"}, {"GET", "/api/v1/runs/r-1"}}) {
    const http::HttpResponse response = Call(method, path, R"({"probes":["cpu"]})");
    EXPECT_EQ(response.status, 403);
    EXPECT_THAT(response.body, HasSubstr("api.token_file"));
  }
}

TEST_F(RunApiTest, StateChangingRequestsNeedTheBearerToken) {
  api_.SetToken(kToken);
  EXPECT_EQ(Call("POST", "/api/v1/runs", R"({"probes":["cpu"]})", "").status, 401);
  const http::HttpResponse wrong = Call("POST", "/api/v1/runs", R"({"probes":["cpu"]})", "s3cret-tokem");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(Header(wrong, "WWW-Authenticate"), "Bearer realm=\"hostperf\"");
  EXPECT_EQ(Call("DELETE", "/api/v1/runs/r-20260101-000000-1", "", "x").status, 401);
  EXPECT_EQ(Call("POST", "/api/v1/runs/r-20260101-000000-1/cancel", "", "").status, 401);
  // Basic auth may occupy Authorization: X-Hostperf-Token works as well.
  http::HttpRequest request;
  request.method = "POST";
  request.path = "/api/v1/runs";
  request.body = R"({"probes":["cpu"]})";
  request.headers["authorization"] = "Basic dXNlcjpwYXNz";
  request.headers["x-hostperf-token"] = kToken;
  EXPECT_EQ(api_.Handle(request).status, 202);
}

TEST_F(RunApiTest, BadBodiesAre400WithAReason) {
  api_.SetToken(kToken);
  const http::HttpResponse not_json = Call("POST", "/api/v1/runs", "{\"probes\": [");
  EXPECT_EQ(not_json.status, 400);
  EXPECT_THAT(not_json.body, HasSubstr("not valid JSON"));
  EXPECT_EQ(not_json.content_type, "application/json");
  const http::HttpResponse unknown = Call("POST", "/api/v1/runs", R"({"probes":["gpu"]})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_THAT(unknown.body, HasSubstr("unknown probe"));
  EXPECT_EQ(Call("POST", "/api/v1/runs", std::string(kMaxRunBodyBytes + 1, ' ')).status, 413);
}

// A full run longer than api.max_run_duration (4h by default) would hold
// the scheduled probes and calendar slots back for as long: 400, naming the key.
TEST_F(RunApiTest, RunsLongerThanTheConfiguredCapAre400) {
  api_.SetToken(kToken);
  const http::HttpResponse refused = Call("POST", "/api/v1/runs", R"({"probes":["cpu"],"duration":"100000h"})");
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_THAT(refused.body, HasSubstr("api.max_run_duration (4h)"));
  EXPECT_EQ(Call("POST", "/api/v1/runs", R"({"probes":["cpu"],"duration":"4h"})").status, 202);
}

TEST_F(RunApiTest, AcceptsAndServesARun) {
  api_.SetToken(kToken);
  const http::HttpResponse accepted = Call("POST", "/api/v1/runs", R"({"probes":["cpu"]})");
  ASSERT_EQ(accepted.status, 202) << accepted.body;
  const json body = json::parse(accepted.body);
  EXPECT_EQ(body["state"], "queued");
  const std::string id = body["id"];
  EXPECT_EQ(Header(accepted, "Location"), "/api/v1/runs/" + id);
  const auto until = std::chrono::steady_clock::now() + 20s;
  json run;
  do {
    EXPECT_EQ(Call("GET", "/api/v1/runs/" + id, "", "").status, 401);  // a record needs the token
    const http::HttpResponse got = Call("GET", "/api/v1/runs/" + id);
    ASSERT_EQ(got.status, 200);
    run = json::parse(got.body);
  } while (run["state"] != "succeeded" && std::chrono::steady_clock::now() < until);
  EXPECT_EQ(run["results"]["cpu"]["ok"], 1);
  EXPECT_EQ(Call("GET", "/api/v1/runs", "", "").status, 401);  // the list needs the token too
  EXPECT_EQ(Call("HEAD", "/api/v1/runs", "", "wrong").status, 401);
  const json list = json::parse(Call("GET", "/api/v1/runs").body);
  ASSERT_EQ(list["runs"].size(), 1u);
  EXPECT_EQ(list["runs"][0]["id"], id);
  EXPECT_EQ(list["runs"][0]["href"], "/api/v1/runs/" + id);
  EXPECT_EQ(Call("DELETE", "/api/v1/runs/" + id).status, 409);  // already finished
}

TEST_F(RunApiTest, UnknownRunsAre404AndWrongMethods405WithAllow) {
  api_.SetToken(kToken);
  EXPECT_EQ(Call("GET", "/api/v1/runs/r-20990101-000000-1").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/runs/../../etc/passwd").status, 404);
  EXPECT_EQ(Call("POST", "/api/v1/runs/r-20990101-000000-1/cancel").status, 404);
  EXPECT_EQ(Call("GET", "/api/v1/runs/r-1/other").status, 404);
  const http::HttpResponse put = Call("PUT", "/api/v1/runs");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(Header(put, "Allow"), "GET, HEAD, POST");
  EXPECT_EQ(Header(Call("POST", "/api/v1/runs/r-1"), "Allow"), "GET, HEAD, DELETE");
  EXPECT_EQ(Header(Call("GET", "/api/v1/runs/r-1/cancel"), "Allow"), "POST");
}

}  // namespace
}  // namespace hostperf::runs
