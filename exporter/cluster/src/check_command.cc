#include "hostperf/cluster/check_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "hostperf/base/files.h"
#include "hostperf/base/http_client.h"
#include "hostperf/cluster/check.h"
#include "hostperf/cluster/check_ssh.h"
#include "hostperf/cluster/run_client.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/api_token.h"

namespace hostperf::cluster {
namespace {

// "hostperf check", or "gpcheckperf" when started as it.
std::string Label() { return probes::CommandLabel(kCheckCommandName); }

constexpr std::string_view kSummary = R"(  check [-d DIR]... [-h HOST]... [-f HOSTFILE] [-r dsNnM] [-D] [-v] [--json]
                      gpcheckperf: disk, stream and network tests on every
                      host, and the RESULT block (hostperf check --help)
  check-agent PROBE   what `check --ssh` runs on each host (--help)
)";

constexpr const char* kUsage = R"(usage: hostperf check [-d DIR]... [-h HOST[:PORT]]... [-f HOSTFILE] [-r dsNnM]
                      [-D] [-v] [-S SIZE] [-B SIZE] [--duration TIME]
                      [--stream-size N] [--api-port PORT] [--net-port PORT]
                      [--token-file FILE] [--tls] [--ca-file FILE]
                      [--cert-file FILE --key-file FILE]
                      [--basic-auth-user USER --basic-auth-password-file FILE]
                      [--insecure-http] [--json]
       hostperf check --ssh [--identity-file FILE] [--ssh-options "..."]
                      [--scp-options "..."] [--tmp-dir DIR] -h HOST... [tests]

gpcheckperf: runs the selected tests on every host at once and prints the
RESULT block. This host runs its tests in-process; other hosts run them
through their hostperf_exporter's run API, or with --ssh (gpcheckperf's way,
and the default when no run API token is configured) on hosts with nothing
installed: hostperf-peer and this program with the libraries it loads are
copied to a new directory on each host over SCP, the tests run there over
SSH with your keys, and the copies are removed when the check ends. The
disk test is gpcheckperf's:
one sequential writer per -d directory, all at once, then one reader per
directory, all at once; a host's bandwidth is its total bytes over the
pass's wall time (vioperf's tests are hostperf io's).

  -r dsNnM          tests (default dsn): d disk, s stream, and one network
                    test: N parallel pairs, n serial pairs, M full matrix
  -d DIR            a directory for the disk test (repeat for more)
  -h HOST[:PORT]    a host (repeat for more; default: this host alone);
                    PORT is its run API port (default --api-port)
  -f HOSTFILE       hosts, one per line
  -S SIZE           the disk test's total over the host's -d directories
                    (as 100GB, 512MB), written exactly, shared by them;
                    default twice the host's RAM, as gpcheckperf, so that
                    the page cache cannot hold it. hostperf writes and reads
                    with O_DIRECT, so a smaller size is valid too
  -B SIZE           the disk test's block size (default 32KB)
  --duration TIME   the network test's length per link (default 15s, at
                    most 60s)
  --stream-size N   the stream test's array size in elements
  -D                per-host bandwidth lines in the RESULT block
  -v                each host's and link's step as it starts and ends, and
                    the matrix's per-link lines
  --json            the RESULT block's figures as JSON on stdout (bytes and
                    seconds; "errors" lists what failed)
  --api-port PORT   other hosts' run API port (default 9580)
  --net-port PORT   other hosts' responder port (default: this config's
                    first probes.net port)
  --token-file FILE other hosts' run API token (default: api.token_file)
Other hosts' --web.config.file (docs/security.md); other hosts need one of
--tls and --insecure-http, since the token goes with every request:
  --tls             https:// (implied by --ca-file and --cert-file)
  --insecure-http   plain http://: the token and results travel in clear
                    (a trusted network only)
  --ca-file FILE    trust this CA for their certificates (default: the
                    system's CAs)
  --cert-file FILE, --key-file FILE
                    a client certificate and its key (mutual TLS)
  --basic-auth-user USER, --basic-auth-password-file FILE
                    basic auth (basic_auth_users); the password is the
                    file's first line. The token then goes in
                    X-Hostperf-Token
Hosts with nothing installed, over SSH (-h HOST is then [user@]host):
  --ssh             copy the tests to each host, run them there, remove them
  --identity-file FILE
                    ssh -i and scp -i
  --ssh-options "..." , --scp-options "..."
                    more options for ssh and scp (before ours: they win)
  --tmp-dir DIR     where each host's copy goes (default /tmp)
  --help            this help
On a terminal, stderr shows what runs now and for how long.
)";

// The run API's client with check's TLS and basic auth flags.
Result<std::unique_ptr<HttpClient>> MakeRunApiClient(const CheckOptions& options) {
  HttpClientSettings settings;
  settings.ca_file = options.ca_file;
  settings.cert_file = options.cert_file;
  settings.key_file = options.key_file;
  if (!options.basic_auth_user.empty()) {
    auto password = ReadBoundedFile(options.basic_auth_password_file, "basic auth password file", kMaxSecretFileBytes,
                                    FileAccess::kOwnerOnly);
    if (!password) return password.failure();
    std::string line = password->substr(0, password->find_first_of("\r\n"));
    if (line.empty()) {
      return Result<std::unique_ptr<HttpClient>>::Error("the basic auth password file " +
                                                        options.basic_auth_password_file + " is empty");
    }
    settings.basic_user = options.basic_auth_user;
    settings.basic_password = std::move(line);
  }
  return HttpClient::Create(std::move(settings));
}

// Other hosts run their tests through their run API, with the fleet's token:
// sets up *client and *remote for them. An exit code when check must stop.
std::optional<int> PrepareRemoteRuns(const CheckOptions& options, const CheckCommandContext& context,
                                     std::unique_ptr<HttpClient>* client, cluster::RemoteRunOptions* remote) {
  auto made = MakeRunApiClient(options);
  if (!made) {
    std::fprintf(stderr, "%s: %s\n", Label().c_str(), made.error().c_str());
    return 1;
  }
  *client = std::move(made).value();
  remote->client = client->get();
  remote->tls = options.tls;
  const std::filesystem::path token_file =
      !options.token_file.empty() ? options.token_file : context.config->api.token_file;
  if (token_file.empty()) {
    std::fprintf(stderr,
                 "%s: other hosts run their tests through their run API: give its token with --token-file FILE or "
                 "api.token_file in the config\n",
                 Label().c_str());
    return 1;
  }
  auto token = runs::ReadApiToken(token_file);
  if (!token) {
    std::fprintf(stderr, "%s: %s\n", Label().c_str(), token.error().c_str());
    return 1;
  }
  remote->token = *token;
  if (!options.tls && !options.insecure_http) {
    return context.usage_error(
        "other hosts get the run API token with every request: use --tls (their --web.config.file serves "
        "https), or --insecure-http to send it over plain http, in clear");
  }
  return std::nullopt;
}

// Prints the RESULT block (or the JSON document) and the errors; the exit code.
int ReportCheckRun(const CheckRun& run, const CheckOptions& options) {
  if (options.json) {
    nlohmann::json document = run.check;
    document["errors"] = run.errors;
    std::printf("%s\n", document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (run.ran) {
    std::fputs(FormatCheckResult(run.check, {options.per_host, options.verbose}).c_str(), stdout);
  }
  for (const auto& error : run.errors) std::fprintf(stderr, "%s: %s\n", Label().c_str(), error.c_str());
  return run.errors.empty() ? 0 : 1;
}

// Notes on stdout (stderr with --json, where stdout holds the document
// alone), steps on the terminal's line.
CheckProgress MakeProgress(const CheckOptions& options, StepLine* line) {
  CheckProgress progress;
  FILE* notes = options.json ? stderr : stdout;
  progress.on_note = [line, notes](const std::string& note) {
    if (line) line->Clear();
    std::fprintf(notes, "%s\n", note.c_str());
    std::fflush(notes);
  };
  progress.on_step = [line](const std::string& step) {
    if (line) line->Set(step);
  };
  return progress;
}

// --ssh: the tests copied to every host and run there (check_ssh.h).
// `by_default`: chosen because no run API is configured, which the error
// says when no host could be reached.
int CheckOverSsh(const CheckOptions& options, const CheckCommandContext& context, bool by_default) {
  const auto cancelled = [&context] { return context.cancel != nullptr && context.cancel->load(); };
  auto hosts = StartSshCheckHosts(options, cancelled, [](const std::string& step) {
    std::fprintf(stderr, "%s: %s\n", Label().c_str(), TerminalSafe(step).c_str());
  });
  if (!hosts) {
    std::fprintf(stderr, "%s: %s\n", Label().c_str(), hosts.error().c_str());
    return 1;
  }
  // With --json, stdout holds the document alone.
  FILE* notes = options.json ? stderr : stdout;
  for (const std::string& unusable : (*hosts)->unusable()) {
    std::fprintf(notes, "%s\n", TerminalSafe(unusable).c_str());
  }
  std::fflush(notes);
  if ((*hosts)->unusable().size() == options.hosts.size()) {
    std::fprintf(stderr,
                 "%s: no_hosts: no host could be reached over SSH%s (--identity-file and --ssh-options choose the "
                 "key and the port; hosts running hostperf_exporter take their tests through the run API with "
                 "--token-file)\n",
                 Label().c_str(), by_default ? ", which is used when no run API token is configured" : "");
    return 1;
  }
  if (cancelled()) return 130;
  CheckRun run;
  {
    std::unique_ptr<StepLine> line = context.step_line ? context.step_line() : nullptr;
    run = RunCheck(options, (*hosts)->host_runner(), "", MakeProgress(options, line.get()), (*hosts)->round_runner());
  }
  hosts->reset();  // every copy removed before the report
  return ReportCheckRun(run, options);
}

}  // namespace

std::string_view CheckCommandSummary() { return kSummary; }

int CheckCommand(const std::vector<std::string>& args, const CheckCommandContext& context) {
  const auto parsed = ParseCheckArgs(args);
  if (!parsed) return context.usage_error(parsed.error());
  if (parsed->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  char name[256] = {};
  const std::string local = ::gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  // Other hosts run their tests through their run API, with the fleet's token.
  const bool any_remote = std::any_of(parsed->hosts.begin(), parsed->hosts.end(), [&](const std::string& host) {
    const auto spec = ParseHostSpec(host, parsed->api_port);
    return !spec || !IsLocalHost(spec->address, local);
  });
  // No run API to reach them with: gpcheckperf's way, over SSH.
  const bool run_api_configured = !parsed->token_file.empty() || !context.config->api.token_file.empty() ||
                                  parsed->tls || parsed->insecure_http || !parsed->basic_auth_user.empty();
  if (parsed->ssh || (any_remote && !run_api_configured)) {
    CheckOptions over_ssh = *parsed;
    over_ssh.ssh = true;
    return CheckOverSsh(over_ssh, context, !parsed->ssh);
  }
  cluster::RemoteRunOptions remote;
  remote.cancel = context.cancel;
  std::unique_ptr<HttpClient> client;
  if (any_remote) {
    if (const auto stop = PrepareRemoteRuns(*parsed, context, &client, &remote)) return *stop;
  }
  const HostRunner run_on = [&](const std::string& host, std::string_view probe, const nlohmann::json& options) {
    const auto spec = ParseHostSpec(host, parsed->api_port);
    if (!spec) return ProbeOutcome::Failure("bad_host", spec.error());
    if (IsLocalHost(spec->address, local)) {
      const probes::ProbeModule* module = probes::FindProbe(probe);
      if (module == nullptr) return ProbeOutcome::Failure("unknown_probe", std::string(probe));
      auto typed = probes::ParseProbeOptions(probe, options);
      if (!typed) return ProbeOutcome::Failure(typed.failure());
      return context.run_local(*module, std::move(typed).value());
    }
    return cluster::RunOnRemote(spec->address, spec->api_port, probe, options, remote);
  };
  std::unique_ptr<StepLine> line = context.step_line ? context.step_line() : nullptr;
  const auto run = RunCheck(*parsed, run_on, local, MakeProgress(*parsed, line.get()));
  line.reset();
  return ReportCheckRun(run, *parsed);
}

}  // namespace hostperf::cluster
