#include "hostperf/runs/run_api.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <nlohmann/json.hpp>

#include "hostperf/base/files.h"

namespace hostperf::runs {
namespace {

using nlohmann::json;

constexpr std::size_t kRecentRuns = 20;

http::HttpResponse Json(int status, const json& body) {
  http::HttpResponse response;
  response.status = status;
  response.content_type = "application/json";
  // Error texts may quote invalid UTF-8 from a request (e.g. a JSON parse
  // error's "last read: ..."): replace it rather than throw (found by fuzzing).
  response.body = body.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  return response;
}

http::HttpResponse Error(int status, std::string message) { return Json(status, {{"error", std::move(message)}}); }

http::HttpResponse MethodNotAllowed(const char* allow) {
  auto response = Error(405, std::string("method not allowed; use ") + allow);
  response.headers.emplace_back("Allow", allow);
  return response;
}

// A run summary for GET /api/v1/runs.
json Summary(const json& run) {
  json summary = json::object();
  for (const char* key : {"id", "state", "reason", "probes", "created_unix_seconds", "started_unix_seconds",
                          "finished_unix_seconds", "progress", "trigger"}) {
    if (run.contains(key)) summary[key] = run[key];
  }
  summary["href"] = std::string(kRunsPath) + "/" + run.value("id", "");
  return summary;
}

}  // namespace

void RunApi::SetToken(std::optional<std::string> token) {
  std::lock_guard lock(mu_);
  token_ = std::move(token);
}

bool RunApi::enabled() const {
  std::lock_guard lock(mu_);
  return token_.has_value();
}

bool RunApi::Authorized(const http::HttpRequest& request) const {
  std::string given;
  const std::string authorization = request.Header("authorization");
  constexpr std::string_view kBearer = "bearer ";
  if (authorization.size() > kBearer.size() &&
      std::equal(kBearer.begin(), kBearer.end(), authorization.begin(),
                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    given = std::string(TrimToken(std::string_view(authorization).substr(kBearer.size())));
  } else {
    given = std::string(TrimToken(request.Header("x-hostperf-token")));
  }
  std::lock_guard lock(mu_);
  return token_ && !given.empty() && TokensEqual(given, *token_);
}

http::HttpResponse RunApi::Handle(const http::HttpRequest& request) {
  if (!enabled()) {
    return Error(403,
                 "the run API is disabled: set api.token_file in the config to a file holding a bearer token "
                 "(e.g. `openssl rand -hex 32 > /etc/hostperf/api-token`), then reload or restart hostperf_exporter");
  }
  const auto unauthorized = [] {
    auto response = Error(401, "missing or wrong bearer token (Authorization: Bearer <token from api.token_file>)");
    response.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"hostperf\"");
    return response;
  };
  std::string_view rest = request.path;
  if (!rest.starts_with(kRunsPath)) return Error(404, "not found");
  rest.remove_prefix(kRunsPath.size());
  if (rest.empty() || rest == "/") {
    if (request.method == "GET" || request.method == "HEAD") {
      // The list names the runs, their states and failure reasons: read
      // with the same token as the records.
      if (!Authorized(request)) return unauthorized();
      json runs = json::array();
      for (const json& run : manager_.Recent(kRecentRuns)) runs.push_back(Summary(run));
      return Json(200, {{"runs", runs}, {"active", manager_.Active()}});
    }
    if (request.method != "POST") return MethodNotAllowed("GET, HEAD, POST");
    if (!Authorized(request)) return unauthorized();
    return Submit(request);
  }
  rest.remove_prefix(1);  // the '/'
  const auto slash = rest.find('/');
  const std::string_view id = rest.substr(0, slash);
  const std::string_view action = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (!RunManager::IsValidId(id)) return Error(404, "no such run");
  if (action == "cancel") {
    if (request.method != "POST") return MethodNotAllowed("POST");
    if (!Authorized(request)) return unauthorized();
    return Cancel(id);
  }
  if (!action.empty()) return Error(404, "not found");
  if (request.method == "GET" || request.method == "HEAD") {
    // A run record holds its results and the probes' messages, which may
    // quote a remote server (a WebHDFS error body): the token that can create
    // runs reads them, as it reads the list above.
    if (!Authorized(request)) return unauthorized();
    auto run = manager_.Get(id);
    if (!run) return Error(404, "no run " + std::string(id) + " (kept: the last runs only)");
    return Json(200, *run);
  }
  if (request.method == "DELETE") {
    if (!Authorized(request)) return unauthorized();
    return Cancel(id);
  }
  return MethodNotAllowed("GET, HEAD, DELETE");
}

http::HttpResponse RunApi::Submit(const http::HttpRequest& request) {
  if (request.body.size() > kMaxRunBodyBytes) {
    return Error(413, "body larger than " + std::to_string(kMaxRunBodyBytes) + " bytes");
  }
  // Checked before parsing: copying or printing a deeply nested value
  // recurses, and CivetWeb's worker threads have 100 KiB stacks (about 870
  // levels inside options.<probe> overflowed one).
  if (const std::string deep = JsonDepthError(request.body); !deep.empty()) {
    return Error(400, "the body is not acceptable JSON: " + deep);
  }
  json body;
  try {
    body = json::parse(request.body);
  } catch (const json::exception& e) {
    return Error(400, std::string("the body is not valid JSON: ") + e.what());
  }
  const auto submission = manager_.Submit(body);
  switch (submission.status) {
    case RunManager::Submission::Status::kAccepted: {
      auto response = Json(202, {{"id", submission.id}, {"state", "queued"}});
      response.headers.emplace_back("Location", std::string(kRunsPath) + "/" + submission.id);
      return response;
    }
    case RunManager::Submission::Status::kConflict: {
      json body_out = {{"error", submission.error}};
      if (!submission.id.empty()) body_out["active"] = submission.id;
      return Json(409, body_out);
    }
    case RunManager::Submission::Status::kInvalid:
      break;
  }
  return Error(400, submission.error);
}

http::HttpResponse RunApi::Cancel(std::string_view id) {
  switch (manager_.Cancel(id)) {
    case RunManager::CancelStatus::kCancelling:
      return Json(202, {{"id", std::string(id)},
                        {"state", manager_.Get(id).value_or(json::object()).value("state", "")},
                        {"cancel", "requested"}});
    case RunManager::CancelStatus::kFinished:
      return Error(409, "run " + std::string(id) + " has already finished");
    case RunManager::CancelStatus::kNotFound:
      break;
  }
  return Error(404, "no run " + std::string(id));
}

}  // namespace hostperf::runs
