#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "hostperf/http/http_server.h"
#include "hostperf/runs/api_token.h"  // the token RunApi checks: ReadApiToken, TokensEqual
#include "hostperf/runs/run_manager.h"

namespace hostperf::runs {

inline constexpr std::string_view kRunsPath = "/api/v1/runs";
inline constexpr std::size_t kMaxRunBodyBytes = 16 * 1024;

// The run API (docs/operator-guide.md, "On-demand full runs") over a RunManager:
//   POST   /api/v1/runs               start a full run     202 / 400 / 401 / 409
//   GET    /api/v1/runs               recent runs          200
//   GET    /api/v1/runs/{id}          state and results    200 / 404
//   POST   /api/v1/runs/{id}/cancel   cancel               202 / 401 / 404 / 409
//   DELETE /api/v1/runs/{id}          cancel (same)
// Everything answers 403 until a token is set. State-changing requests need
// "Authorization: Bearer <token>" (or "X-Hostperf-Token: <token>" when basic
// auth from --web.config.file occupies the Authorization header).
class RunApi {
 public:
  explicit RunApi(RunManager& manager) : manager_(manager) {}

  // nullopt disables the API.
  void SetToken(std::optional<std::string> token);
  bool enabled() const;

  // Handles kRunsPath and everything under it.
  http::HttpResponse Handle(const http::HttpRequest& request);

 private:
  bool Authorized(const http::HttpRequest& request) const;
  http::HttpResponse Submit(const http::HttpRequest& request);
  http::HttpResponse Cancel(std::string_view id);

  RunManager& manager_;
  mutable std::mutex mu_;
  std::optional<std::string> token_;
};

}  // namespace hostperf::runs
