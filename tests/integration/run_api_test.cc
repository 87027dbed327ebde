// The run API of the real hostperf_exporter on port 0: disabled, auth,
// validation, one full run at a time, cancel, history across a restart, and a
// small full run of every probe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "process_harness.h"
#include "registered_probes.h"

namespace hostperf::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

constexpr const char* kToken = "integration-token-0123456789";

// State in `dir`, scheduled probes out of the way (full runs still work for
// disabled probes), the net responder on a free loopback port.
std::string ApiConfig(const TempDir& dir, const std::string& token_file) {
  return "state_directory = \"" + dir.path() + "/state\"\n" +
         (token_file.empty() ? "" : "[api]\ntoken_file = \"" + token_file + "\"\n") +
         DisabledProbesToml(
             {{"disk", "reserve = \"1kb\"\n"}, {"net", "ports = [" + std::to_string(FreeLoopbackPort()) + "]\n"}});
}

class ApiDaemon {
 public:
  explicit ApiDaemon(const std::string& config_file)
      : process_(HOSTPERF_EXPORTER_BIN,
                 {"--config.file=" + config_file, "--web.listen-address=127.0.0.1:0", "--web.enable-lifecycle"}) {}

  int Port() {
    if (port_ == 0) port_ = process_.ListeningPort();
    return port_;
  }

  HttpReply Call(const std::string& method, const std::string& path, const std::string& body = "",
                 const std::string& token = kToken) {
    std::map<std::string, std::string> headers;
    if (!token.empty()) headers["Authorization"] = "Bearer " + token;
    if (!body.empty()) headers["Content-Type"] = "application/json";
    auto reply = HttpRequest(Port(), method, path, headers, body);
    EXPECT_TRUE(reply) << method << " " << path << " got no answer; stderr:\n" << process_.Stderr();
    return reply.value_or(HttpReply{});
  }

  json Run(const std::string& id) {
    const HttpReply reply = Call("GET", "/api/v1/runs/" + id);
    return json::parse(reply.body, nullptr, false);
  }

  // Polls until the run leaves queued/running; its final record.
  json WaitFinished(const std::string& id, seconds patience) {
    const auto until = std::chrono::steady_clock::now() + patience;
    json run;
    while (std::chrono::steady_clock::now() < until) {
      run = Run(id);
      const std::string state = run.is_object() ? run.value("state", "") : "";
      if (state != "queued" && state != "running") return run;
      std::this_thread::sleep_for(milliseconds(100));
    }
    ADD_FAILURE() << "run " << id << " did not finish: " << run.dump();
    return run;
  }

  ChildProcess& process() { return process_; }

 private:
  ChildProcess process_;
  int port_ = 0;
};

std::string Accepted(ApiDaemon& daemon, const json& body) {
  const HttpReply reply = daemon.Call("POST", "/api/v1/runs", body.dump());
  EXPECT_EQ(reply.status, 202) << reply.body;
  const json parsed = json::parse(reply.body, nullptr, false);
  EXPECT_EQ(parsed.value("state", ""), "queued");
  return parsed.is_object() ? parsed.value("id", "") : "";
}

// A disk run in `data` that lasts about `duration` (tiny files, page cache).
json DiskBody(const std::string& data, const std::string& duration) {
  return {{"probes", {"disk"}},
          {"duration", duration},
          {"options",
           {{"disk",
             {{"directories", {data}},
              {"data_size", "2mb"},
              {"thread_count", 1},
              {"max_buffer_size", "64kb"},
              {"log_interval", "500ms"},
              {"disable_direct_io", true}}}}}};
}

bool DirectoryEmpty(const std::string& path) { return std::filesystem::is_empty(path); }

TEST(RunApi, DisabledUntilATokenFileIsConfigured) {
  TempDir dir;
  ApiDaemon daemon(dir.Write("c.toml", ApiConfig(dir, "")));
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/api/v1/runs"}, {"GET", "/api/v1/runs"}, {"GET", "/api/v1/runs/r-20260101-000000-1"}}) {
    const HttpReply reply = daemon.Call(method, path, R"({"probes":["cpu"]})");
    EXPECT_EQ(reply.status, 403) << method << " " << path;
    EXPECT_THAT(reply.body, HasSubstr("set api.token_file"));
  }
}

TEST(RunApi, UnreadableOrEmptyTokenFileRefusesToStart) {
  TempDir dir;
  for (const std::string& token_file : {dir.path() + "/missing", dir.Write("empty", "\n")}) {
    const auto result = RunCommand(
        HOSTPERF_EXPORTER_BIN,
        {"--config.file=" + dir.Write("c.toml", ApiConfig(dir, token_file)), "--web.listen-address=127.0.0.1:0"},
        milliseconds(30000));
    EXPECT_NE(result.status, 0);
    EXPECT_THAT(result.err, HasSubstr("api.token_file")) << token_file;
  }
}

TEST(RunApi, AuthValidationOneAtATimeCancelAndPromptScrapes) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  std::filesystem::create_directory(data);
  ApiDaemon daemon(dir.Write("c.toml", ApiConfig(dir, dir.Write("token", std::string(kToken) + "\n"))));

  // 401 before anything else is looked at.
  EXPECT_EQ(daemon.Call("POST", "/api/v1/runs", R"({"probes":["cpu"]})", "").status, 401);
  EXPECT_EQ(daemon.Call("POST", "/api/v1/runs", R"({"probes":["cpu"]})", "wrong-token").status, 401);
  // 400 with a reason.
  const HttpReply bad_json = daemon.Call("POST", "/api/v1/runs", "{\"probes\": [\"cpu\"");
  EXPECT_EQ(bad_json.status, 400);
  EXPECT_THAT(bad_json.body, HasSubstr("not valid JSON"));
  const HttpReply unknown = daemon.Call("POST", "/api/v1/runs", R"({"probes":["gpu"]})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_THAT(unknown.body, HasSubstr("unknown probe"));
  const HttpReply bad_option =
      daemon.Call("POST", "/api/v1/runs", R"({"probes":["disk"],"options":{"disk":{"thread_count":"lots"}}})");
  EXPECT_EQ(bad_option.status, 400);
  EXPECT_THAT(bad_option.body, HasSubstr("thread_count"));
  // 404 and 405.
  EXPECT_EQ(daemon.Call("GET", "/api/v1/runs/r-20990101-000000-1").status, 404);
  HttpReply put = daemon.Call("PUT", "/api/v1/runs");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.headers["allow"], "GET, HEAD, POST");

  // Twenty POSTs at once: exactly one full run starts.
  const std::string body = DiskBody(data, "4s").dump();
  std::vector<int> statuses(20);
  std::vector<std::string> bodies(20);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < 20; ++i) {
      threads.emplace_back([&, i] {
        auto reply = HttpRequest(daemon.Port(), "POST", "/api/v1/runs",
                                 {{"Authorization", std::string("Bearer ") + kToken}}, body);
        statuses[i] = reply ? reply->status : 0;
        bodies[i] = reply ? reply->body : "";
      });
    }
    for (auto& thread : threads) thread.join();
  }
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 202), 1);
  EXPECT_EQ(std::count(statuses.begin(), statuses.end(), 409), 19);
  std::string id;
  for (int i = 0; i < 20; ++i) {
    if (statuses[i] == 202) id = json::parse(bodies[i])["id"];
  }
  ASSERT_THAT(id, ::testing::MatchesRegex("r-[0-9]{8}-[0-9]{6}-[0-9]+"));
  EXPECT_EQ(daemon.Call("POST", "/api/v1/runs", R"({"probes":["cpu"]})").status, 409);

  // While the disk run is active, progress is visible and scrapes stay fast.
  bool saw_progress = false;
  for (int i = 0; i < 10; ++i) {
    const auto started = std::chrono::steady_clock::now();
    const auto metrics = HttpRequest(daemon.Port(), "GET", "/metrics");
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_TRUE(metrics);
    EXPECT_EQ(metrics->status, 200);
    EXPECT_LT(took, seconds(2)) << "scrape took " << std::chrono::duration<double>(took).count() << " s";
    const json run = daemon.Run(id);
    if (run.value("state", "") == "running" && run["progress"].value("probe", "") == "disk" &&
        !run["progress"].value("test", "").empty()) {
      saw_progress = true;
    }
    std::this_thread::sleep_for(milliseconds(150));
  }
  EXPECT_TRUE(saw_progress) << daemon.Run(id).dump();
  EXPECT_EQ(daemon.Call("GET", "/api/v1/runs", "", "").status, 401);
  const HttpReply list = daemon.Call("GET", "/api/v1/runs");
  EXPECT_EQ(list.status, 200);
  EXPECT_THAT(list.body, HasSubstr(id));

  // Cancel (POST .../cancel; DELETE is the same): the probe stops and cleans up.
  EXPECT_EQ(daemon.Call("POST", "/api/v1/runs/" + id + "/cancel", "", "").status, 401);
  const HttpReply cancel = daemon.Call("POST", "/api/v1/runs/" + id + "/cancel");
  EXPECT_EQ(cancel.status, 202) << cancel.body;
  const json cancelled = daemon.WaitFinished(id, seconds(30));
  EXPECT_EQ(cancelled.value("state", ""), "cancelled") << cancelled.dump();
  EXPECT_TRUE(DirectoryEmpty(data)) << "the disk probe left files behind";
  EXPECT_EQ(daemon.Call("DELETE", "/api/v1/runs/" + id).status, 409);  // already over
  // The scheduler was paused and resumed; the daemon still serves.
  EXPECT_EQ(daemon.Call("GET", "/-/ready", "", "").status, 200);
#ifdef HOSTPERF_CURL
  // The run API on one kept connection: a POST with a body
  // (refused, 400), then the list and a scrape.
  const std::string base = "http://127.0.0.1:" + std::to_string(daemon.Port());
  const std::string auth = std::string("Authorization: Bearer ") + kToken;
  const auto curl = RunCommand(HOSTPERF_CURL,
                               {"-sS",
                                "-v",
                                "-o",
                                "/dev/null",
                                "-H",
                                auth,
                                "-H",
                                "Content-Type: application/json",
                                "--data",
                                "{\"probes\": [",
                                base + "/api/v1/runs",
                                "--next",
                                "-sS",
                                "-v",
                                "-o",
                                "/dev/null",
                                "-H",
                                auth,
                                base + "/api/v1/runs",
                                "-o",
                                "/dev/null",
                                base + "/metrics"},
                               seconds(30));
  ASSERT_EQ(curl.status, 0) << curl.err;
  std::size_t connects = 0;
  for (auto at = curl.err.find("Connected to"); at != std::string::npos; at = curl.err.find("Connected to", at + 1)) {
    ++connects;
  }
  EXPECT_EQ(connects, 1u) << curl.err;
  EXPECT_THAT(curl.err, HasSubstr("< HTTP/1.1 400"));
  EXPECT_THAT(curl.err, HasSubstr("< HTTP/1.1 200"));
  EXPECT_THAT(curl.err, ::testing::Not(HasSubstr("< Connection: close")));
#endif
}

TEST(RunApi, SmallFullRunOfEveryProbeAndHistoryAcrossARestart) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  std::filesystem::create_directory(data);
  const std::string token_file = dir.Write("token", kToken);
  const std::string config = dir.Write("c.toml", ApiConfig(dir, token_file));
  std::string id;
  json results;
  // Every registered probe: small options for those below, the defaults for
  // any other; and what each of those probes' results and /metrics hold.
  const std::vector<std::string> probes = RegisteredProbes();
  const json small = {{"disk", DiskBody(data, "1s")["options"]["disk"]},
                      {"memory", {{"array_elements", 200000}, {"iterations", 2}, {"threads", 1}}},
                      {"net", {{"tests", {"latency", "tcp-throughput"}}, {"datarate", 64}, {"duration", 0.3}}}};
  std::string metrics_text;
  std::string landing_text;
  const std::map<std::string, std::function<void(const json&)>> checks = {
      {"memory",
       [](const json& result) {
         EXPECT_EQ(result["kernels"].size(), 4u);
         EXPECT_EQ(result["validation"]["ok"], true);
       }},
      {"disk",
       [&](const json& result) {
         EXPECT_EQ(result["directories"][0]["directory"], data);
         EXPECT_EQ(result["directories"][0]["verify_errors"], 0);
         EXPECT_THAT(metrics_text, HasSubstr("hostperf_full_run_figure{figure=\"write_bytes_per_second_per_core\""));
         EXPECT_THAT(landing_text, HasSubstr("per physical core"));  // judged on the landing page
       }},
      {"net",
       [](const json& result) {
         EXPECT_FALSE(result["tests"]["latency"].empty()) << result.dump();
         EXPECT_FALSE(result["tests"]["tcp-throughput"].empty()) << result.dump();
       }},
      {"cpu",
       [](const json& result) {
         EXPECT_EQ(result["checksum_ok"], true);
         EXPECT_GT(result["cpu_seconds"].get<double>(), 0);
       }},
  };
  {
    ApiDaemon daemon(config);
    json body = {{"probes", probes}, {"duration", "1s"}, {"options", json::object()}};
    for (const std::string& probe : probes) {
      if (small.contains(probe)) body["options"][probe] = small[probe];
    }
    id = Accepted(daemon, body);
    const json run = daemon.WaitFinished(id, seconds(240));
    ASSERT_EQ(run.value("state", ""), "succeeded") << run.dump(2);
    results = run["results"];
    EXPECT_TRUE(DirectoryEmpty(data));

    // The last full run on /metrics, next to the scheduled families; the
    // landing page links to it and judges it.
    const auto metrics = HttpRequest(daemon.Port(), "GET", "/metrics");
    ASSERT_TRUE(metrics);
    metrics_text = metrics->body;
    const auto landing = HttpRequest(daemon.Port(), "GET", "/");
    ASSERT_TRUE(landing);
    landing_text = landing->body;
    EXPECT_THAT(metrics_text, HasSubstr("hostperf_full_runs_total{state=\"succeeded\"} 1"));
    EXPECT_THAT(landing_text, HasSubstr("<a href=\"/api/v1/runs/" + id + "\">"));
    for (const std::string& probe : probes) {
      SCOPED_TRACE(probe);
      EXPECT_EQ(run["outcomes"][probe]["status"], "success");
      ASSERT_TRUE(results.contains(probe));
      EXPECT_THAT(metrics_text, HasSubstr("hostperf_full_run_success{probe=\"" + probe + "\"} 1"));
      if (const auto check = checks.find(probe); check != checks.end()) check->second(results[probe]);
    }

    // A reload with an empty token file fails and keeps the old token.
    dir.Write("token", "");
    EXPECT_EQ(daemon.Call("POST", "/-/reload", "", "").status, 500);
    EXPECT_EQ(daemon.Call("DELETE", "/api/v1/runs/r-20990101-000000-1").status, 404);  // still authorized

    daemon.process().Signal(SIGTERM);
    EXPECT_EQ(daemon.process().Wait(milliseconds(30000)), 0);
  }
  dir.Write("token", kToken);
  ApiDaemon restarted(config);
  const json again = restarted.Run(id);
  EXPECT_EQ(again.value("state", ""), "succeeded") << again.dump();
  EXPECT_EQ(again["results"], results);
  const HttpReply list = restarted.Call("GET", "/api/v1/runs");
  EXPECT_THAT(list.body, HasSubstr(id));
  const auto metrics = HttpRequest(restarted.Port(), "GET", "/metrics");
  ASSERT_TRUE(metrics);
  for (const std::string& probe : probes) {
    EXPECT_THAT(metrics->body, HasSubstr("hostperf_full_run_success{probe=\"" + probe + "\"} 1"));
  }
}

}  // namespace
}  // namespace hostperf::testing
