#include "hostperf/cluster/run_client.h"

#include <civetweb.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <thread>

#include "hostperf/base/files.h"

namespace hostperf::exporter {
namespace {

using nlohmann::json;
using probes::ProbeOutcome;

void InitCivetwebOnce() {
  static std::once_flag once;
  std::call_once(once, [] { mg_init_library(0); });
}

std::string Where(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// The peer's {"error": "..."} text, else the body itself (shortened).
std::string ErrorText(const HttpReply& reply) {
  try {
    if (!JsonDepthError(reply.body, kMaxStoredJsonDepth).empty()) return reply.body.substr(0, 200);
    const json body = json::parse(reply.body);
    if (body.is_object() && body.contains("error") && body["error"].is_string()) return body["error"];
  } catch (const json::exception&) {
  }
  return reply.body.substr(0, 200);
}

ProbeOutcome::Status StatusFromName(const std::string& name) {
  if (name == "success") return ProbeOutcome::Status::kSuccess;
  if (name == "skipped") return ProbeOutcome::Status::kSkipped;
  return ProbeOutcome::Status::kFailure;
}

}  // namespace

Result<HttpReply> HttpCall(const std::string& host, std::uint16_t port, std::string_view method, std::string_view path,
                           const std::vector<std::pair<std::string, std::string>>& headers, std::string_view body,
                           std::chrono::milliseconds timeout) {
  using R = Result<HttpReply>;
  InitCivetwebOnce();
  std::array<char, 256> error{};
  // CivetWeb connects non-blocking with its own bound (10 s), resolving names.
  mg_connection* conn = mg_connect_client(host.c_str(), port, 0, error.data(), error.size());
  if (conn == nullptr) return R::Error("cannot connect to " + Where(host, port) + ": " + error.data());
  std::string request = std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: " + Where(host, port) +
                        "\r\nConnection: close\r\nAccept: application/json\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST") {
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;
  if (mg_write(conn, request.data(), request.size()) != static_cast<int>(request.size())) {
    mg_close_connection(conn);
    return R::Error("cannot send the request to " + Where(host, port));
  }
  error.fill(0);
  if (mg_get_response(conn, error.data(), error.size(), static_cast<int>(timeout.count())) < 0) {
    mg_close_connection(conn);
    return R::Error("no answer from " + Where(host, port) + " within " + std::to_string(timeout.count()) +
                    " ms: " + error.data());
  }
  HttpReply reply;
  const mg_response_info* info = mg_get_response_info(conn);
  reply.status = info != nullptr ? info->status_code : 0;
  std::array<char, 8192> chunk{};
  // A run's JSON is a few KiB; refuse to buffer a runaway answer.
  constexpr std::size_t kMaxBody = 16 * 1024 * 1024;
  for (int n = 0; (n = mg_read(conn, chunk.data(), chunk.size())) > 0;) {
    reply.body.append(chunk.data(), static_cast<std::size_t>(n));
    if (reply.body.size() > kMaxBody) {
      mg_close_connection(conn);
      return R::Error("the answer from " + Where(host, port) + " is larger than 16 MiB");
    }
  }
  mg_close_connection(conn);
  return reply;
}

ProbeOutcome RunOnRemote(const std::string& host, std::uint16_t port, std::string_view probe,
                         const nlohmann::json& options, const RemoteRunOptions& settings) {
  const std::string where = Where(host, port);
  const std::vector<std::pair<std::string, std::string>> auth = {{"Authorization", "Bearer " + settings.token}};
  const json body = {{"probes", {std::string(probe)}}, {"options", {{std::string(probe), options}}}};
  const auto submitted = HttpCall(host, port, "POST", "/api/v1/runs", auth, body.dump(), settings.request_timeout);
  if (!submitted) return ProbeOutcome::Failure("remote_unreachable", submitted.error());
  const int status = submitted->status;
  if (status == 409) {
    return ProbeOutcome::Failure("remote_busy", where + " is running another full run: " + ErrorText(*submitted));
  }
  if (status == 400 || status == 401 || status == 403) {
    return ProbeOutcome::Failure(
        "remote_rejected", where + " refused the run (HTTP " + std::to_string(status) + "): " + ErrorText(*submitted));
  }
  std::string id;
  try {
    const json accepted = JsonDepthError(submitted->body, kMaxStoredJsonDepth).empty() ? json::parse(submitted->body)
                                                                                       : json(json::value_t::discarded);
    if (status == 202 && accepted.is_object() && accepted.contains("id") && accepted["id"].is_string()) {
      id = accepted["id"];
    }
  } catch (const json::exception&) {
  }
  if (id.empty()) {
    return ProbeOutcome::Failure("remote_error", where + " answered the submission with HTTP " +
                                                     std::to_string(status) + ": " + ErrorText(*submitted));
  }

  const std::string run_path = "/api/v1/runs/" + id;
  const auto deadline = std::chrono::steady_clock::now() + settings.run_timeout;
  int transport_failures = 0;
  while (true) {
    if (settings.cancel != nullptr && settings.cancel->load()) {
      (void)HttpCall(host, port, "POST", run_path + "/cancel", auth, "", settings.request_timeout);
      return ProbeOutcome::Failure("cancelled", "cancelled; asked " + where + " to cancel run " + id);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      (void)HttpCall(host, port, "POST", run_path + "/cancel", auth, "", settings.request_timeout);
      return ProbeOutcome::Failure("remote_timeout", "run " + id + " on " + where + " did not finish in time");
    }
    std::this_thread::sleep_for(settings.poll_interval);
    const auto polled = HttpCall(host, port, "GET", run_path, {}, "", settings.request_timeout);
    if (!polled) {
      // A busy peer may miss one poll; a dead one is given up after a few.
      if (++transport_failures >= 5) return ProbeOutcome::Failure("remote_unreachable", polled.error());
      continue;
    }
    transport_failures = 0;
    json run;
    try {
      // A peer's record embeds its request a few levels down; deeper is refused.
      if (JsonDepthError(polled->body, kMaxStoredJsonDepth).empty()) run = json::parse(polled->body);
    } catch (const json::exception&) {
    }
    if (polled->status != 200 || !run.is_object()) {
      return ProbeOutcome::Failure("remote_error", where + " answered GET " + run_path + " with HTTP " +
                                                       std::to_string(polled->status) + ": " + ErrorText(*polled));
    }
    const std::string state = run.value("state", "");
    if (state == "queued" || state == "running") continue;
    const json outcome = run.contains("outcomes") && run["outcomes"].is_object()
                             ? run["outcomes"].value(std::string(probe), json::object())
                             : json::object();
    json result = run.contains("results") && run["results"].is_object()
                      ? run["results"].value(std::string(probe), json::object())
                      : json::object();
    if (!outcome.is_object() || outcome.empty()) {
      return ProbeOutcome::Failure("remote_error", "run " + id + " on " + where + " ended " + state + " (" +
                                                       run.value("reason", std::string()) + ") without a " +
                                                       std::string(probe) + " outcome");
    }
    ProbeOutcome out;
    out.status = StatusFromName(outcome.value("status", std::string()));
    out.reason = outcome.value("reason", std::string());
    out.message = outcome.value("message", std::string());
    out.result = std::move(result);
    return out;
  }
}

}  // namespace hostperf::exporter
