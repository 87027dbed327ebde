// The CLI's shared behaviour across commands, with the real binary: one-line
// usage errors, a --help per command, --json documents alone on stdout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_harness.h"
#include "registered_probes.h"

namespace hostperf::testing {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Every registered probe's command, then `hostperf check` (the cluster's).
std::vector<std::string> Commands() {
  std::vector<std::string> commands = ProbeCommands();
  commands.emplace_back("check");
  return commands;
}

TEST(CliUsage, ABadOptionIsOneLineNamingItAndWhereHelpIs) {
  std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus"}, "hostperf: unknown option \"--bogus\"; see 'hostperf --help'\n"},
      {{"frob"}, "hostperf: unknown command \"frob\"; see 'hostperf --help'\n"},
  };
  // Each command, each kind of unknown option.
  for (const std::string& command : Commands()) {
    for (const std::string option : {"--bogus", "--bogus=1", "-x"}) {
      cases.push_back(
          {{command, option},
           "hostperf " + command + ": unknown option \"" + option + "\"; see 'hostperf " + command + " --help'\n"});
    }
  }
  for (const auto& [args, expected] : cases) {
    const auto run = RunCommand(HOSTPERF_CLI_BIN, args, seconds(10));
    EXPECT_EQ(run.status, 2) << args[0];
    EXPECT_EQ(run.err, expected);
    EXPECT_EQ(run.out, "") << args[0];
  }
  // A value error names the option the same way.
  const auto value = RunCommand(HOSTPERF_CLI_BIN, {"net", "--datarate=fast"}, seconds(10));
  EXPECT_EQ(value.status, 2);
  EXPECT_EQ(value.err, "hostperf net: --datarate needs a number; see 'hostperf net --help'\n");
  // No command at all: the usage, as a reminder of the commands.
  const auto none = RunCommand(HOSTPERF_CLI_BIN, {}, seconds(10));
  EXPECT_EQ(none.status, 2);
  EXPECT_THAT(none.err, StartsWith("hostperf: no command given\n\nusage: hostperf"));
}

TEST(CliUsage, EveryCommandHasItsOwnHelp) {
  const auto global = RunCommand(HOSTPERF_CLI_BIN, {"--help"}, seconds(10));
  ASSERT_EQ(global.status, 0) << global.err;
  const std::vector<std::string> commands = Commands();
  ASSERT_GT(commands.size(), 1u);
  for (const std::string& command : commands) {
    // The global usage lists the command...
    EXPECT_THAT(global.out, HasSubstr("\n  " + command + " ")) << command;
    // ...and its own --help starts with its usage line, and is not the global one.
    const auto help = RunCommand(HOSTPERF_CLI_BIN, {command, "--help"}, seconds(10));
    EXPECT_EQ(help.status, 0) << command << ": " << help.err;
    EXPECT_THAT(help.out, StartsWith("usage: hostperf " + command + " ")) << command;
    EXPECT_THAT(help.out, Not(HasSubstr("Commands:"))) << command;
    EXPECT_THAT(help.out, HasSubstr("--json")) << command;
  }
}

// Existing scripts call the reference tools by name: the build's drop-in
// directory (and the package's /usr/libexec/hostperf/drop-in) holds links that
// run the matching command with the tool's own arguments.
TEST(CliDropIn, ReferenceToolNamesRunTheirCommand) {
  const std::filesystem::path drop_in = std::filesystem::path(HOSTPERF_CLI_BIN).parent_path() / "drop-in";
  // Each probe module's reference tool, and Greenplum's gpcheckperf (`check`).
  std::vector<std::pair<std::string, std::string>> tools;
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    if (!module->command.reference_tool.empty()) {
      tools.emplace_back(module->command.reference_tool, module->command.name);
    }
  }
  tools.emplace_back("gpcheckperf", "check");
  ASSERT_GT(tools.size(), 1u);
  for (const auto& [tool, command] : tools) {
    const std::string link = (drop_in / tool).string();
    ASSERT_TRUE(std::filesystem::is_symlink(link)) << link;
    const auto help = RunCommand(link, {"--help"}, seconds(10));
    EXPECT_EQ(help.status, 0) << tool << ": " << help.err;
    EXPECT_THAT(help.out, StartsWith("usage: hostperf " + command + " ")) << tool;
    // Every argument is the tool's: a global flag is not taken.
    const auto bad = RunCommand(link, {"--config.file=/nonexistent"}, seconds(10));
    EXPECT_EQ(bad.status, 2) << tool;
    // Errors speak the name the operator typed.
    EXPECT_THAT(bad.err,
                StartsWith(tool + ": unknown option \"--config.file=/nonexistent\"; see '" + tool + " --help'"))
        << tool;
  }
  const auto tests = RunCommand((drop_in / "vnetperf").string(), {"--list-tests"}, seconds(10));
  EXPECT_EQ(tests.out, "latency\ntcp-throughput\nudp-throughput\nconnections\n");

  // The config comes from HOSTPERF_CONFIG: with its secret, vnetperf gets as
  // far as the unreachable host (without it: no_secret).
  TempDir dir;
  const std::string secret = dir.Write("secret", "drop-in-test-secret\n");
  std::filesystem::permissions(secret, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string config = dir.Write("c.toml", "[probes.net]\nsecret_file = \"" + secret + "\"\n");
  const auto run = RunCommand("/usr/bin/env",
                              {"HOSTPERF_CONFIG=" + config, (drop_in / "vnetperf").string(), "--hosts=127.0.0.1:1",
                               "--output-file=" + dir.path() + "/r.json", "latency"},
                              seconds(30));
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_THAT(run.err, StartsWith("vnetperf: bad_hosts: ")) << run.err;
  EXPECT_THAT(run.out, HasSubstr("Host 127.0.0.1:1 is not reachable"));
  EXPECT_THAT(run.err, Not(HasSubstr("no_secret")));
  EXPECT_THAT(run.err, Not(HasSubstr("did not answer its hello"))) << "WARN, the default, is quiet";
  // vnetperf's --log-level: INFO says what happened to each host.
  const auto verbose = RunCommand("/usr/bin/env",
                                  {"HOSTPERF_CONFIG=" + config, (drop_in / "vnetperf").string(), "--hosts=127.0.0.1:1",
                                   "--output-file=" + dir.path() + "/r.json", "--log-level", "INFO", "latency"},
                                  seconds(30));
  EXPECT_THAT(verbose.err, HasSubstr("127.0.0.1:1 did not answer its hello")) << verbose.err;
  EXPECT_THAT(verbose.err, HasSubstr("0 of 1 hosts answered")) << verbose.err;

  // No secret configured: vnetperf's plain command line goes over SSH (here
  // a stand-in ssh that cannot connect), and the host is named with why.
  const std::string fake_bin = dir.path() + "/bin";
  std::filesystem::create_directories(fake_bin);
  for (const char* tool : {"ssh", "scp"}) {
    const std::string script = dir.Write(std::string("bin/") + tool, "#!/bin/sh\necho \"" + std::string(tool) +
                                                                         ": connect to host: stand-in refuses\" >&2\n"
                                                                         "exit 255\n");
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  }
  const std::string no_secret = dir.Write("no-secret.toml", "[probes.net]\nports = [14159]\n");
  const auto over_ssh = RunCommand(
      "/usr/bin/env",
      {"PATH=" + fake_bin + ":/usr/bin:/bin", "HOSTPERF_CONFIG=" + no_secret, (drop_in / "vnetperf").string(),
       "--hosts=db1.invalid", "--output-file=" + dir.path() + "/ssh.json", "latency"},
      seconds(60));
  EXPECT_EQ(over_ssh.status, 1) << over_ssh.err;
  EXPECT_THAT(over_ssh.out + over_ssh.err, HasSubstr("db1.invalid")) << over_ssh.out << over_ssh.err;
  EXPECT_THAT(over_ssh.out + over_ssh.err, HasSubstr("stand-in refuses")) << over_ssh.out << over_ssh.err;
  EXPECT_THAT(over_ssh.err, Not(HasSubstr("no_secret")));

  // Any other name is hostperf itself.
  const std::string other = dir.path() + "/hostperf-renamed";
  std::filesystem::create_symlink(HOSTPERF_CLI_BIN, other);
  const auto renamed = RunCommand(other, {"--help"}, seconds(10));
  EXPECT_EQ(renamed.status, 0);
  EXPECT_THAT(renamed.out, StartsWith("usage: hostperf [--config.file=PATH] COMMAND"));
}

TEST(CliJson, IoPrintsTheResultAloneAndWritesNoLogUnlessAsked) {
  TempDir dir;
  const std::string data = dir.path() + "/data";
  std::filesystem::create_directory(data);
  // Run in `dir`, where a default log (results<date-time>.json) would land.
  const auto run = RunCommand("/bin/sh",
                              {"-c",
                               "cd \"$1\" && exec \"$2\" io --json --duration=1s --data-size=16mb "
                               "--thread-count=1 --log-interval=1s --disable-direct-io data",
                               "sh", dir.path(), HOSTPERF_CLI_BIN},
                              seconds(120));
  ASSERT_EQ(run.status, 0) << run.err;
  const auto result = nlohmann::json::parse(run.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(result.is_object()) << run.out;
  ASSERT_TRUE(result.contains("rows")) << run.out;
  EXPECT_FALSE(result["rows"].empty());
  // Neither the test's files nor a log are left behind.
  EXPECT_TRUE(std::filesystem::is_empty(data));
  std::vector<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    entries.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(entries, std::vector<std::string>{"data"});
  // With --log-file the log is written beside the stdout document.
  const std::string log = dir.path() + "/log.json";
  const auto logged = RunCommand(HOSTPERF_CLI_BIN,
                                 {"io", "--json", "--duration=1s", "--data-size=16mb", "--thread-count=1",
                                  "--disable-direct-io", "--log-file=" + log, data},
                                 seconds(120));
  ASSERT_EQ(logged.status, 0) << logged.err;
  EXPECT_TRUE(nlohmann::json::parse(logged.out, nullptr, false).is_object()) << logged.out;
  EXPECT_TRUE(std::filesystem::exists(log));
}

TEST(CliJson, CheckVerboseStepsGoToStderrAndTheFiguresToStdout) {
  const auto run =
      RunCommand(HOSTPERF_CLI_BIN, {"check", "-v", "-r", "s", "--stream-size", "200000", "--json"}, seconds(60));
  ASSERT_EQ(run.status, 0) << run.err;
  const auto document = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_TRUE(document.is_object()) << run.out;
  EXPECT_EQ(document["errors"], nlohmann::json::array());
  ASSERT_EQ(document["hosts"].size(), 1u) << run.out;
  EXPECT_GT(document["hosts"][0]["stream"]["bytes_per_second"].get<double>(), 1e8);
  EXPECT_THAT(run.err, HasSubstr("[Info] stream test on "));
  EXPECT_THAT(run.err, HasSubstr(" done in "));
  // Not a terminal: no self-overwriting progress line.
  EXPECT_THAT(run.err, Not(HasSubstr("\r")));
}

}  // namespace
}  // namespace hostperf::testing
