#include "hostperf/cluster/run_client.h"

#include <cctype>
#include <optional>
#include <thread>

#include "hostperf/base/files.h"

namespace hostperf::cluster {
namespace {

using nlohmann::json;
using probes::ProbeOutcome;

std::string Where(const std::string& host, std::uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// One exchange with the peer's run API.
class RunApi {
 public:
  RunApi(const std::string& host, std::uint16_t port, const RemoteRunOptions& settings)
      : origin_(HttpOrigin(settings.tls, host, port)), settings_(settings) {
    // Basic auth owns Authorization; the token moves to its own header.
    headers_.emplace_back("Accept", "application/json");
    if (!settings.client->settings().basic_user.empty()) {
      headers_.emplace_back("X-Hostperf-Token", settings.token);
    } else {
      headers_.emplace_back("Authorization", "Bearer " + settings.token);
    }
  }

  Result<HttpReply> Call(const std::string& method, const std::string& path, std::string body = {}) const {
    HttpRequest request;
    request.method = method;
    request.url = origin_ + path;
    request.headers = headers_;
    request.body = std::move(body);
    request.timeout = settings_.request_timeout;
    return settings_.client->Send(request);
  }

 private:
  std::string origin_;
  const RemoteRunOptions& settings_;
  std::vector<std::pair<std::string, std::string>> headers_;
};

// A transfer failure as the outcome's reason.
ProbeOutcome TransferFailure(const Failure& failure) {
  return ProbeOutcome::Failure(failure.reason == "tls" ? "remote_tls" : "remote_unreachable", failure.message);
}

// The peer's {"error": "..."} text, else the body itself (shortened).
std::string ErrorText(const HttpReply& reply) {
  try {
    if (!JsonDepthError(reply.body, kMaxStoredJsonDepth).empty()) return reply.body.substr(0, 200);
    const json body = json::parse(reply.body);
    if (body.is_object() && body.contains("error") && body["error"].is_string()) return body["error"];
  } catch (const json::exception&) {
  }
  std::string text = reply.body.substr(0, 200);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

// Posts the one-probe run. Fills *id and returns nothing when the peer
// accepted it, else the outcome that says why it did not.
std::optional<ProbeOutcome> SubmitRun(const RunApi& api, const std::string& where, std::string_view probe,
                                      const nlohmann::json& options, std::string* id) {
  const json body = {{"probes", {std::string(probe)}}, {"options", {{std::string(probe), options}}}};
  const auto submitted = api.Call("POST", "/api/v1/runs", body.dump());
  if (!submitted) return TransferFailure(submitted.failure());
  const int status = submitted->status;
  if (status == 409) {
    return ProbeOutcome::Failure("remote_busy", where + " is running another full run: " + ErrorText(*submitted));
  }
  if (status == 400 || status == 401 || status == 403) {
    return ProbeOutcome::Failure(
        "remote_rejected", where + " refused the run (HTTP " + std::to_string(status) + "): " + ErrorText(*submitted));
  }
  try {
    const json accepted = JsonDepthError(submitted->body, kMaxStoredJsonDepth).empty() ? json::parse(submitted->body)
                                                                                       : json(json::value_t::discarded);
    if (status == 202 && accepted.is_object() && accepted.contains("id") && accepted["id"].is_string()) {
      *id = accepted["id"];
    }
  } catch (const json::exception&) {
  }
  if (id->empty()) {
    return ProbeOutcome::Failure("remote_error", where + " answered the submission with HTTP " +
                                                     std::to_string(status) + ": " + ErrorText(*submitted));
  }
  return std::nullopt;
}

// The probe's outcome from a run record that is no longer queued or running.
ProbeOutcome OutcomeOfEndedRun(const json& run, const std::string& state, std::string_view probe, const std::string& id,
                               const std::string& where) {
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
  ProbeOutcome out = probes::OutcomeFromJson(outcome);
  out.result = std::move(result);
  return out;
}

// Polls run `id` until it ends, is cancelled, times out or the peer fails.
ProbeOutcome WaitForRun(const RunApi& api, const std::string& where, std::string_view probe, const std::string& id,
                        const RemoteRunOptions& settings) {
  const std::string run_path = "/api/v1/runs/" + id;
  const auto deadline = std::chrono::steady_clock::now() + settings.run_timeout;
  int transport_failures = 0;
  while (true) {
    if (settings.cancel != nullptr && settings.cancel->load()) {
      (void)api.Call("POST", run_path + "/cancel");
      return ProbeOutcome::Failure("cancelled", "cancelled; asked " + where + " to cancel run " + id);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      (void)api.Call("POST", run_path + "/cancel");
      return ProbeOutcome::Failure("remote_timeout", "run " + id + " on " + where + " did not finish in time");
    }
    std::this_thread::sleep_for(settings.poll_interval);
    const auto polled = api.Call("GET", run_path);
    if (!polled) {
      // A busy peer may miss one poll; a dead one is given up after a few.
      if (++transport_failures >= 5) return TransferFailure(polled.failure());
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
    return OutcomeOfEndedRun(run, state, probe, id, where);
  }
}

}  // namespace

ProbeOutcome RunOnRemote(const std::string& host, std::uint16_t port, std::string_view probe,
                         const nlohmann::json& options, const RemoteRunOptions& settings) {
  const std::string where = Where(host, port);
  if (settings.client == nullptr) return ProbeOutcome::Failure("remote_error", "no HTTP client configured");
  const RunApi api(host, port, settings);
  std::string id;
  if (auto failed = SubmitRun(api, where, probe, options, &id)) return std::move(*failed);
  return WaitForRun(api, where, probe, id, settings);
}

}  // namespace hostperf::cluster
