#include "hostperf/config/config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hostperf/base/files.h"
#include "hostperf/probes/cpu/module.h"
#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/memory/module.h"
#include "hostperf/probes/net/module.h"
#include "hostperf/probes/probe.h"

namespace hostperf::config {
namespace {

namespace fs = std::filesystem;

// The config as the binaries load it: with every registered probe's section.
Result<Config> Load(std::string_view text, std::string_view source) { return probes::LoadConfigString(text, source); }
Result<Config> LoadConfigFile(const std::filesystem::path& path) { return probes::LoadConfigFile(path); }
Config ProbeDefaults() { return probes::DefaultConfig(); }
const probes::cpu::CpuProbeConfig& Cpu(const Config& c) { return c.Settings<probes::cpu::CpuProbeConfig>(); }
const probes::disk::DiskProbeConfig& Disk(const Config& c) { return c.Settings<probes::disk::DiskProbeConfig>(); }
const probes::memory::MemoryProbeConfig& Memory(const Config& c) {
  return c.Settings<probes::memory::MemoryProbeConfig>();
}
const probes::net::NetProbeConfig& Net(const Config& c) { return c.Settings<probes::net::NetProbeConfig>(); }

// config/hostperf.toml and every probe's part, as cmake/ExampleConfig.cmake
// assembles them.
const fs::path kExampleConfig = HOSTPERF_EXAMPLE_CONFIG;
// What the package installs as /etc/hostperf/hostperf.toml (a conffile).
const fs::path kConffile = HOSTPERF_CONFFILE;

void ExpectSameSchedule(const ProbeSchedule& a, const ProbeSchedule& b, const std::string& probe) {
  SCOPED_TRACE("probes." + probe);
  EXPECT_EQ(a.enabled, b.enabled);
  EXPECT_EQ(a.interval, b.interval);
  EXPECT_EQ(a.timeout, b.timeout);
}

// Field by field (not via a hand-written operator==) so a failure names the
// field that drifted.
void ExpectSameConfig(const Config& a, const Config& b) {
  EXPECT_EQ(a.state_directory, b.state_directory);
  EXPECT_EQ(a.api.token_file, b.api.token_file);
  EXPECT_EQ(a.budget.cpu_seconds_per_hour, b.budget.cpu_seconds_per_hour);
  EXPECT_EQ(a.budget.disk_bytes_per_hour, b.budget.disk_bytes_per_hour);
  EXPECT_EQ(a.budget.net_bytes_per_hour, b.budget.net_bytes_per_hour);
  EXPECT_EQ(a.budget.busy_cpu_pressure, b.budget.busy_cpu_pressure);
  EXPECT_EQ(a.budget.busy_io_pressure, b.budget.busy_io_pressure);
  EXPECT_EQ(a.scheduler.first_run_splay, b.scheduler.first_run_splay);
  EXPECT_EQ(a.scheduler.jitter, b.scheduler.jitter);
  EXPECT_EQ(a.full_runs.enabled, b.full_runs.enabled);
  EXPECT_EQ(a.full_runs.every, b.full_runs.every);
  EXPECT_EQ(a.full_runs.window_start, b.full_runs.window_start);
  EXPECT_EQ(a.full_runs.window_anchor, b.full_runs.window_anchor);
  EXPECT_EQ(a.full_runs.window, b.full_runs.window);
  EXPECT_EQ(a.full_runs.probes, b.full_runs.probes);
  EXPECT_EQ(a.full_runs.duration, b.full_runs.duration);
  EXPECT_EQ(a.full_runs.options_json, b.full_runs.options_json);
  EXPECT_EQ(a.full_runs.host, b.full_runs.host);

  // Every registered probe's schedule, then the built-in probes' own settings.
  EXPECT_EQ(a.probes.size(), b.probes.size());
  for (const auto& [name, section] : a.probes) {
    ASSERT_TRUE(b.probes.contains(name)) << name;
    ExpectSameSchedule(section.schedule, b.Section(name).schedule, name);
  }
  EXPECT_EQ(Cpu(a).calibration_runs, Cpu(b).calibration_runs);
  EXPECT_EQ(Cpu(a).throttle_samples, Cpu(b).throttle_samples);
  EXPECT_EQ(Cpu(a).low_load_gap, Cpu(b).low_load_gap);
  EXPECT_EQ(Cpu(a).high_load_spin, Cpu(b).high_load_spin);
  EXPECT_EQ(Cpu(a).baselines, Cpu(b).baselines);

  EXPECT_EQ(Memory(a).memory_budget, Memory(b).memory_budget);

  EXPECT_EQ(Disk(a).directories, Disk(b).directories);
  EXPECT_EQ(Disk(a).directory_roles, Disk(b).directory_roles);
  EXPECT_EQ(Disk(a).bytes_per_run, Disk(b).bytes_per_run);
  EXPECT_EQ(Disk(a).threads, Disk(b).threads);
  EXPECT_EQ(Disk(a).files_per_thread, Disk(b).files_per_thread);
  EXPECT_EQ(Disk(a).max_buffer_size, Disk(b).max_buffer_size);
  EXPECT_EQ(Disk(a).disable_direct_io, Disk(b).disable_direct_io);
  EXPECT_EQ(Disk(a).disable_crc, Disk(b).disable_crc);
  EXPECT_EQ(Disk(a).reserve, Disk(b).reserve);

  EXPECT_EQ(Net(a).bind_address, Net(b).bind_address);
  EXPECT_EQ(Net(a).ports, Net(b).ports);
  EXPECT_EQ(Net(a).secret_file, Net(b).secret_file);
  EXPECT_EQ(Net(a).peers, Net(b).peers);
  EXPECT_EQ(Net(a).peers_file, Net(b).peers_file);
  EXPECT_EQ(Net(a).max_peers_per_cycle, Net(b).max_peers_per_cycle);
  EXPECT_EQ(Net(a).packets_per_cycle, Net(b).packets_per_cycle);
  EXPECT_EQ(Net(a).packet_interval, Net(b).packet_interval);
  EXPECT_EQ(Net(a).reply_timeout, Net(b).reply_timeout);
  EXPECT_EQ(Net(a).throughput_duration, Net(b).throughput_duration);
  EXPECT_EQ(Net(a).throughput_rate, Net(b).throughput_rate);
  EXPECT_EQ(Net(a).udp_datagram_size, Net(b).udp_datagram_size);
  EXPECT_EQ(Net(a).max_connections, Net(b).max_connections);
  EXPECT_EQ(Net(a).rate_limit, Net(b).rate_limit);
}

// Writes a file that is removed when the object goes away.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    std::string pattern = (fs::temp_directory_path() / "hostperf_config_test_XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    EXPECT_GE(fd, 0);
    ::close(fd);
    path_ = pattern;
    std::ofstream(path_) << contents;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(DefaultsTest, MatchDesignDocument) {
  const Config c = ProbeDefaults();
  EXPECT_EQ(c.source, "<embedded defaults>");
  EXPECT_EQ(c.state_directory, "");
  EXPECT_EQ(c.api.token_file, "");
  EXPECT_EQ(c.budget.cpu_seconds_per_hour, 36);
  EXPECT_EQ(c.budget.disk_bytes_per_hour, 2 * kGiB);
  EXPECT_EQ(c.budget.net_bytes_per_hour, 2 * kGiB);
  EXPECT_EQ(c.Section("cpu").schedule.interval, 5min);
  EXPECT_EQ(c.Section("cpu").schedule.timeout, 1min);
  EXPECT_EQ(c.Section("memory").schedule.interval, 15min);
  EXPECT_EQ(c.Section("disk").schedule.interval, 15min);
  EXPECT_EQ(Disk(c).bytes_per_run, 64 * kMiB);
  EXPECT_EQ(Disk(c).threads, 1u);
  EXPECT_EQ(Disk(c).max_buffer_size, kMiB);
  EXPECT_EQ(Disk(c).reserve, kGiB);
  EXPECT_EQ(c.Section("net").schedule.interval, 30s);
  EXPECT_EQ(Net(c).ports, std::vector<std::uint16_t>{14159});
  EXPECT_EQ(Net(c).max_peers_per_cycle, 32u);
  EXPECT_EQ(Net(c).observers, 8u);
  // Defaults must themselves be valid: every timeout within its interval.
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    SCOPED_TRACE(std::string(module->name));
    const ProbeSchedule& s = c.Section(module->name).schedule;
    EXPECT_GE(s.interval, 1s);
    EXPECT_GT(s.timeout, 0s);
    EXPECT_LE(s.timeout, s.interval);
  }
}

TEST(LoadStringTest, EmptyDocumentGivesDefaults) {
  const auto loaded = Load("", "empty.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ExpectSameConfig(*loaded, ProbeDefaults());
  EXPECT_EQ(loaded->source, "empty.toml");
}

TEST(LoadStringTest, FullValidFileSetsEveryField) {
  const auto loaded = Load(R"(
state_directory = "/srv/hostperf"

[api]
token_file = "/etc/hostperf/token"

[budget]
cpu_seconds_per_hour = 18.5
disk_bytes_per_hour = "1.5gb"
net_bytes_per_hour = 1048576
busy_cpu_pressure = 75
busy_io_pressure = 12.5

[scheduler]
first_run_splay = "2min"
jitter = 0.25

[probes.cpu]
enabled = false
interval = "10 minutes"
timeout = 90
calibration_runs = 7
throttle_samples = 100
low_load_gap = "20ms"
high_load_spin = "500us"
baselines = { "0123abcd0123abcd" = "48ms", "ffffeeee00001111" = "1.25s" }
reference_times = [
  { cpu = "Xeon Gold 6248, 2.50GHz", fingerprint = "0123abcd0123abcd", seconds = 6.1 },
  { cpu = "EPYC 7B13", fingerprint = "ffffeeee00001111", seconds = 4 },
]

[probes.memory]
enabled = false
interval = "1h"
timeout = "2min"
memory_budget = "1gb"

[probes.disk]
enabled = false
interval = "30min"
timeout = "10min"
directories = ["/data/1", "/data/2"]
directory_roles = { "/data/2" = "wal_2" }
bytes_per_run = "128 MB"
threads = 4
files_per_thread = 2
max_buffer_size = "256kb"
disable_direct_io = true
disable_crc = true
reserve = "10gb"

[probes.net]
enabled = false
interval = "1min"
timeout = "45s"
bind_address = "0.0.0.0"
ports = [14159, 14160]
secret_file = "/etc/hostperf/secret"
peers = ["db1", "db2:14160", "[fe80::1]:14159"]
peers_file = "/etc/hostperf/peers.json"
allow_empty_peers_file = true
self = "db1"
observers = 12
max_peers_per_cycle = 48
)",
                           "full.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const Config& c = *loaded;
  EXPECT_EQ(c.source, "full.toml");
  EXPECT_EQ(c.state_directory, "/srv/hostperf");
  EXPECT_EQ(c.api.token_file, "/etc/hostperf/token");
  EXPECT_EQ(c.budget.cpu_seconds_per_hour, 18.5);
  EXPECT_EQ(c.budget.disk_bytes_per_hour, 1536 * kMiB);
  EXPECT_EQ(c.budget.net_bytes_per_hour, 1048576u);
  EXPECT_EQ(c.budget.busy_cpu_pressure, 75);
  EXPECT_EQ(c.budget.busy_io_pressure, 12.5);
  EXPECT_EQ(c.scheduler.first_run_splay, 2min);
  EXPECT_EQ(c.scheduler.jitter, 0.25);

  EXPECT_FALSE(c.Section("cpu").schedule.enabled);
  EXPECT_EQ(c.Section("cpu").schedule.interval, 10min);
  EXPECT_EQ(c.Section("cpu").schedule.timeout, 90s);
  EXPECT_EQ(Cpu(c).calibration_runs, 7u);
  EXPECT_EQ(Cpu(c).throttle_samples, 100u);
  EXPECT_EQ(Cpu(c).low_load_gap, 20ms);
  EXPECT_EQ(Cpu(c).high_load_spin, 500us);
  const std::map<std::string, Duration> baselines = {{"0123abcd0123abcd", 48ms}, {"ffffeeee00001111", 1250ms}};
  EXPECT_EQ(Cpu(c).baselines, baselines);
  ASSERT_EQ(Cpu(c).reference_times.size(), 2u);
  EXPECT_EQ(Cpu(c).reference_times[0].cpu, "Xeon Gold 6248, 2.50GHz");
  EXPECT_EQ(Cpu(c).reference_times[0].fingerprint, "0123abcd0123abcd");
  EXPECT_EQ(Cpu(c).reference_times[0].seconds, 6.1);
  EXPECT_EQ(Cpu(c).reference_times[1].cpu, "EPYC 7B13");
  EXPECT_EQ(Cpu(c).reference_times[1].seconds, 4);

  EXPECT_FALSE(c.Section("memory").schedule.enabled);
  EXPECT_EQ(c.Section("memory").schedule.interval, 1h);
  EXPECT_EQ(c.Section("memory").schedule.timeout, 2min);
  EXPECT_EQ(Memory(c).memory_budget, kGiB);

  EXPECT_FALSE(c.Section("disk").schedule.enabled);
  EXPECT_EQ(c.Section("disk").schedule.interval, 30min);
  EXPECT_EQ(c.Section("disk").schedule.timeout, 10min);
  EXPECT_EQ(Disk(c).directories, (std::vector<std::string>{"/data/1", "/data/2"}));
  EXPECT_EQ(Disk(c).directory_roles, (std::map<std::string, std::string>{{"/data/2", "wal_2"}}));
  EXPECT_EQ(Disk(c).bytes_per_run, 128 * kMiB);
  EXPECT_EQ(Disk(c).threads, 4u);
  EXPECT_EQ(Disk(c).files_per_thread, 2u);
  EXPECT_EQ(Disk(c).max_buffer_size, 256 * kKiB);
  EXPECT_TRUE(Disk(c).disable_direct_io);
  EXPECT_TRUE(Disk(c).disable_crc);
  EXPECT_EQ(Disk(c).reserve, 10 * kGiB);

  EXPECT_FALSE(c.Section("net").schedule.enabled);
  EXPECT_EQ(c.Section("net").schedule.interval, 1min);
  EXPECT_EQ(c.Section("net").schedule.timeout, 45s);
  EXPECT_EQ(Net(c).bind_address, "0.0.0.0");
  EXPECT_EQ(Net(c).ports, (std::vector<std::uint16_t>{14159, 14160}));
  EXPECT_EQ(Net(c).secret_file, "/etc/hostperf/secret");
  EXPECT_EQ(Net(c).peers, (std::vector<std::string>{"db1", "db2:14160", "[fe80::1]:14159"}));
  EXPECT_EQ(Net(c).peers_file, "/etc/hostperf/peers.json");
  EXPECT_TRUE(Net(c).allow_empty_peers_file);
  EXPECT_EQ(Net(c).self, "db1");
  EXPECT_EQ(Net(c).observers, 12u);
  EXPECT_EQ(Net(c).max_peers_per_cycle, 48u);
}

TEST(LoadStringTest, DottedKeysAndInlineTablesAreEquivalent) {
  const auto loaded = Load(R"(
probes.cpu.interval = "1h"
probes.net = { ports = [1, 65535] }
)",
                           "dotted.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->Section("cpu").schedule.interval, 1h);
  EXPECT_EQ(Net(*loaded).ports, (std::vector<std::uint16_t>{1, 65535}));
}

TEST(LoadStringTest, UnsetTimeoutIsCappedAtAShorterInterval) {
  // The net default timeout (20s) would exceed a 10s interval.
  const auto loaded = Load("[probes.net]\ninterval = \"10s\"\n", "short.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->Section("net").schedule.interval, 10s);
  EXPECT_EQ(loaded->Section("net").schedule.timeout, 10s);
  // A longer interval leaves the default timeout alone.
  const auto longer = Load("[probes.net]\ninterval = \"1h\"\n", "long.toml");
  ASSERT_TRUE(longer.ok()) << longer.error();
  EXPECT_EQ(longer->Section("net").schedule.timeout, 20s);
}

TEST(ExampleConfigTest, EqualsDefaults) {
  const auto loaded = LoadConfigFile(kExampleConfig);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ExpectSameConfig(*loaded, ProbeDefaults());
  EXPECT_EQ(loaded->source, kExampleConfig.string());
}

struct KeysProbeSettings : ProbeSection {
  std::string path;
  std::uint32_t count = 1;
};

TEST(SectionKeysTest, ScheduleKeysThenTheModulesOwnInDeclarationOrder) {
  const SectionSchema section = DescribeSection<KeysProbeSettings>(
      "keys", ProbeSchedule{}, +[](Schema& schema, KeysProbeSettings& settings) {
        schema.String("path", &settings.path);
        schema.Uint("count", &settings.count, 1, 10);
      });
  EXPECT_EQ(SectionKeys(section), (std::vector<std::string>{"enabled", "interval", "timeout", "path", "count"}));
}

// Every key of the model appears in the example (loading it already proves
// there is no key the loader does not know): the root's, listed here, and
// every registered probe's, from its module.
TEST(ExampleConfigTest, DocumentsEveryKey) {
  std::set<std::string> expected = {
      "state_directory",
      "api.token_file",
      "api.max_run_duration",
      "budget.cpu_seconds_per_hour",
      "budget.disk_bytes_per_hour",
      "budget.net_bytes_per_hour",
      "budget.busy_cpu_pressure",
      "budget.busy_io_pressure",
      "scheduler.first_run_splay",
      "scheduler.jitter",
      "full_runs.enabled",
      "full_runs.every",
      "full_runs.window_start",
      "full_runs.window",
      "full_runs.probes",
      "full_runs.duration",
      "full_runs.host",
  };
  for (const auto& section : probes::ConfigSections()) {
    for (const std::string& key : SectionKeys(section)) expected.insert("probes." + section.name + "." + key);
  }
  EXPECT_GT(expected.size(), 60u);  // the four built-in probes' keys are among them
  std::ifstream in(kExampleConfig);
  ASSERT_TRUE(in) << kExampleConfig;
  std::set<std::string> found;
  std::string section;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    if (line[first] == '[') {
      section = line.substr(first + 1, line.find(']') - first - 1) + ".";
      continue;
    }
    const auto equals = line.find('=');
    ASSERT_NE(equals, std::string::npos) << line;
    std::string key = line.substr(first, equals - first);
    key.erase(key.find_last_not_of(" \t") + 1);
    found.insert(section + key);
  }
  EXPECT_EQ(found, expected);

  // And every key carries a one-line comment.
  std::ifstream again(kExampleConfig);
  bool previous_was_comment = false;
  while (std::getline(again, line)) {
    const bool is_key = !line.empty() && line[0] != '#' && line[0] != '[' && line.find('=') != std::string::npos;
    if (is_key) {
      EXPECT_TRUE(previous_was_comment || line.find('#') != std::string::npos) << "undocumented: " << line;
    }
    previous_was_comment = !line.empty() && line[0] == '#';
  }
}

// The conffile sets nothing: the package's upgrades bring new defaults (and
// new keys) without changing it, so dpkg never asks about an edited copy.
TEST(ShippedConffileTest, LoadsToTheDefaults) {
  const auto loaded = LoadConfigFile(kConffile);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ExpectSameConfig(*loaded, ProbeDefaults());
}

TEST(ShippedConffileTest, HasOnlyCommentsAndPointsToTheAnnotatedExample) {
  std::ifstream in(kConffile);
  ASSERT_TRUE(in) << kConffile;
  std::string text;
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    text += line + "\n";
    EXPECT_TRUE(line.empty() || line[0] == '#') << "an active line changes with the defaults: " << line;
  }
  EXPECT_GT(lines, 3);
  EXPECT_NE(text.find("/usr/share/doc/hostperf/examples/hostperf.toml"), std::string::npos) << text;
  // No default value is spelled out, even commented: a changed default would
  // change the conffile. Every "key = value" line of the annotated example
  // must be absent.
  std::ifstream example(kExampleConfig);
  ASSERT_TRUE(example) << kExampleConfig;
  while (std::getline(example, line)) {
    line = line.substr(0, line.find('#'));
    line.erase(line.find_last_not_of(" \t") + 1);
    if (line.empty() || line[0] == '[' || line.find('=') == std::string::npos) continue;
    EXPECT_EQ(text.find(line), std::string::npos) << "default spelled out in the conffile: " << line;
  }
}

struct BadCase {
  std::string name;
  std::string toml;
  std::string error;
};

TEST(LoadStringTest, RejectsBadConfigWithPositionedMessage) {
  const std::vector<BadCase> cases = {
      {"syntax error", "state_directory = \n",
       R"(bad.toml:1:19: Error while parsing key-value pair: expected value, saw '\n')"},
      {"duplicate key", "[api]\ntoken_file = \"a\"\ntoken_file = \"b\"\n",
       "bad.toml:3:14: Error while parsing key-value pair: cannot redefine existing string 'token_file'"},
      {"unknown top-level key", "state_dir = \"/x\"\n", R"(bad.toml:1:1: unknown key "state_dir")"},
      {"calendar run longer than the cap", "[api]\nmax_run_duration = \"1h\"\n[full_runs]\nduration = \"2h\"\n",
       "bad.toml:4:12: full_runs.duration: 2h is longer than api.max_run_duration (1h)"},
      {"cap under a second", "[api]\nmax_run_duration = \"10ms\"\n",
       "bad.toml:2:20: api.max_run_duration: 10ms is out of range (must be at least 1s)"},
      {"unknown section", "[metrics]\nport = 1\n", R"(bad.toml:1:2: unknown key "metrics")"},
      {"unknown probe", "[probes.gpu]\nenabled = true\n", R"(bad.toml:1:9: unknown key "probes.gpu")"},
      {"unknown key in probe", "[probes.cpu]\nintervall = \"5min\"\n",
       R"(bad.toml:2:1: unknown key "probes.cpu.intervall")"},
      {"unknown dotted key", "probes.cpu.colour = 1\n", R"(bad.toml:1:12: unknown key "probes.cpu.colour")"},
      {"unknown quoted key", "[budget]\n\"cpu seconds\" = 1\n", R"(bad.toml:2:1: unknown key "budget.'cpu seconds'")"},
      {"bool for duration", "[probes.cpu]\ninterval = true\n",
       R"(bad.toml:2:12: probes.cpu.interval: expected a duration string like "5min", got boolean)"},
      {"float for duration", "[scheduler]\nfirst_run_splay = 1.5\n",
       R"(bad.toml:2:19: scheduler.first_run_splay: expected a duration string like "5min", got float)"},
      {"string for integer", "[probes.cpu]\ncalibration_runs = \"5\"\n",
       "bad.toml:2:20: probes.cpu.calibration_runs: expected an integer, got string"},
      {"float for integer", "[probes.net]\nmax_peers_per_cycle = 8.0\n",
       "bad.toml:2:23: probes.net.max_peers_per_cycle: expected an integer, got float"},
      {"string for bool", "[probes.disk]\nenabled = \"yes\"\n",
       "bad.toml:2:11: probes.disk.enabled: expected a boolean (true or false), got string"},
      {"string for the empty peers file switch", "[probes.net]\nallow_empty_peers_file = \"yes\"\n",
       "bad.toml:2:26: probes.net.allow_empty_peers_file: expected a boolean (true or false), got string"},
      {"integer for string", "[api]\ntoken_file = 5\n",
       "bad.toml:2:14: api.token_file: expected a string, got integer"},
      {"string for number", "[scheduler]\njitter = \"10%\"\n",
       "bad.toml:2:10: scheduler.jitter: expected a number, got string"},
      {"section not a table", "api = \"on\"\n", "bad.toml:1:7: api: expected a table, got string"},
      {"probe not a table", "[probes]\nnet = true\n", "bad.toml:2:7: probes.net: expected a table, got boolean"},
      {"bad duration", "[probes.cpu]\ninterval = \"10 parsecs\"\n",
       R"(bad.toml:2:12: probes.cpu.interval: invalid duration "10 parsecs": unknown unit "parsecs" (use s, min, h, ms, us))"},
      {"negative integer duration", "[probes.memory]\ntimeout = -5\n",
       R"(bad.toml:2:11: probes.memory.timeout: invalid duration "-5": negative durations are not allowed)"},
      {"bad size", "[budget]\ndisk_bytes_per_hour = \"2 gallons\"\n",
       R"(bad.toml:2:23: budget.disk_bytes_per_hour: invalid size "2 gallons": unknown unit "gallons" (use b, kb, mb, gb, tb))"},
      {"bool for size", "[probes.memory]\nmemory_budget = false\n",
       R"(bad.toml:2:17: probes.memory.memory_budget: expected a size string like "64mb", got boolean)"},
      {"zero disk threads", "[probes.disk]\nthreads = 0\n",
       "bad.toml:2:11: probes.disk.threads: 0 is out of range [1, 1024]"},
      {"zero size", "[probes.disk]\nbytes_per_run = 0\n",
       "bad.toml:2:17: probes.disk.bytes_per_run: 0b is out of range (must be at least 1b)"},
      {"jitter too large", "[scheduler]\njitter = 0.7\n",
       "bad.toml:2:10: scheduler.jitter: 0.7 is out of range [0, 0.5]"},
      {"jitter negative", "[scheduler]\njitter = -1\n", "bad.toml:2:10: scheduler.jitter: -1 is out of range [0, 0.5]"},
      {"pressure above 100", "[budget]\nbusy_cpu_pressure = 101\n",
       "bad.toml:2:21: budget.busy_cpu_pressure: 101 is out of range [0, 100]"},
      {"jitter nan", "[scheduler]\njitter = nan\n", "bad.toml:2:10: scheduler.jitter: nan is out of range [0, 0.5]"},
      {"cpu budget zero", "[budget]\ncpu_seconds_per_hour = 0\n",
       "bad.toml:2:24: budget.cpu_seconds_per_hour: 0 is out of range (must be a finite number greater than 0)"},
      {"cpu budget infinite", "[budget]\ncpu_seconds_per_hour = inf\n",
       "bad.toml:2:24: budget.cpu_seconds_per_hour: inf is out of range (must be a finite number greater than 0)"},
      {"calibration_runs zero", "[probes.cpu]\ncalibration_runs = 0\n",
       "bad.toml:2:20: probes.cpu.calibration_runs: 0 is out of range [1, 100]"},
      {"throttle_samples too large", "[probes.cpu]\nthrottle_samples = 100001\n",
       "bad.toml:2:20: probes.cpu.throttle_samples: 100001 is out of range [1, 100000]"},
      {"max_peers_per_cycle zero", "[probes.net]\nmax_peers_per_cycle = 0\n",
       "bad.toml:2:23: probes.net.max_peers_per_cycle: 0 is out of range [1, 10000]"},
      {"port out of range", "[probes.net]\nports = [14159, 70000]\n",
       "bad.toml:2:17: probes.net.ports[1]: 70000 is out of range [1, 65535]"},
      {"port zero", "[probes.net]\nports = [0]\n", "bad.toml:2:10: probes.net.ports[0]: 0 is out of range [1, 65535]"},
      {"port as string", "[probes.net]\nports = [\"14159\"]\n",
       "bad.toml:2:10: probes.net.ports[0]: expected an integer, got string"},
      {"ports not an array", "[probes.net]\nports = 14159\n",
       "bad.toml:2:9: probes.net.ports: expected an array of port numbers, got integer"},
      {"duplicate port", "[probes.net]\nports = [14159, 14160, 14159]\n",
       "bad.toml:2:24: probes.net.ports[2]: duplicate port 14159"},
      {"empty ports", "[probes.net]\nports = []\n", "bad.toml:2:9: probes.net.ports: must list at least one port"},
      {"peer not a string", "[probes.net]\npeers = [\"db1\", 2]\n",
       "bad.toml:2:17: probes.net.peers[1]: expected a string, got integer"},
      {"udp datagram too small", "[probes.net]\nudp_datagram_size = 16\n",
       "bad.toml:2:21: probes.net.udp_datagram_size: 16 is out of range [64, 65000]"},
      {"zero packets per cycle", "[probes.net]\npackets_per_cycle = 0\n",
       "bad.toml:2:21: probes.net.packets_per_cycle: 0 is out of range [1, 100000]"},
      {"zero packet interval", "[probes.net]\npacket_interval = \"0s\"\n",
       "bad.toml:2:19: probes.net.packet_interval: 0s is out of range (must be greater than 0s)"},
      {"zero throughput rate", "[probes.net]\nthroughput_rate = \"0b\"\n",
       "bad.toml:2:19: probes.net.throughput_rate: 0b is out of range (must be at least 1b)"},
      {"zero max connections", "[probes.net]\nmax_connections = 0\n",
       "bad.toml:2:19: probes.net.max_connections: 0 is out of range [1, 100000]"},
      {"empty directory", "[probes.disk]\ndirectories = [\"\"]\n",
       "bad.toml:2:16: probes.disk.directories[0]: must not be empty"},
      {"directories not an array", "[probes.disk]\ndirectories = \"/data\"\n",
       "bad.toml:2:15: probes.disk.directories: expected an array of strings, got string"},
      {"role for an unlisted directory",
       "[probes.disk]\ndirectories = [\"/a\"]\ndirectory_roles = { \"/b\" = \"data\" }\n",
       R"(bad.toml:3:21: probes.disk.directory_roles.'/b': "/b" is not in probes.disk.directories)"},
      {"role without directories", "[probes.disk]\ndirectory_roles = { \"/var/lib/hostperf/disk\" = \"state\" }\n",
       R"(bad.toml:2:21: probes.disk.directory_roles.'/var/lib/hostperf/disk': "/var/lib/hostperf/disk" is not in probes.disk.directories)"},
      {"bad role name", "[probes.disk]\ndirectories = [\"/a\"]\ndirectory_roles = { \"/a\" = \"Fast-SSD\" }\n",
       R"(bad.toml:3:28: probes.disk.directory_roles.'/a': "Fast-SSD" is not a name of 1 to 32 characters a-z, 0-9 and _)"},
      {"role too long",
       "[probes.disk]\ndirectories = [\"/a\"]\ndirectory_roles = { \"/a\" = \"" + std::string(33, 'r') + "\" }\n",
       R"(bad.toml:3:28: probes.disk.directory_roles.'/a': ")" + std::string(33, 'r') +
           R"(" is not a name of 1 to 32 characters a-z, 0-9 and _)"},
      {"empty role", "[probes.disk]\ndirectories = [\"/a\"]\ndirectory_roles = { \"/a\" = \"\" }\n",
       R"(bad.toml:3:28: probes.disk.directory_roles.'/a': "" is not a name of 1 to 32 characters a-z, 0-9 and _)"},
      {"role not a string", "[probes.disk]\ndirectories = [\"/a\"]\ndirectory_roles = { \"/a\" = 1 }\n",
       R"(bad.toml:3:28: probes.disk.directory_roles.'/a': expected a name string like { "/data" = "data" }, got integer)"},
      {"roles not a table", "[probes.disk]\ndirectory_roles = [\"data\"]\n",
       R"(bad.toml:2:19: probes.disk.directory_roles: expected a table like { "/data" = "data" }, got array)"},
      {"interval below 1s", "[probes.cpu]\ninterval = \"500ms\"\n",
       "bad.toml:2:12: probes.cpu.interval: 500ms is out of range (must be at least 1s)"},
      {"zero timeout", "[probes.cpu]\ntimeout = \"0s\"\n",
       "bad.toml:2:11: probes.cpu.timeout: 0s is out of range (must be greater than 0s)"},
      {"timeout above interval", "[probes.cpu]\ninterval = \"5min\"\ntimeout = \"10min\"\n",
       "bad.toml:3:11: probes.cpu.timeout: 10min is longer than the interval (5min)"},
      {"timeout above default interval", "[probes.net]\ntimeout = \"1min\"\n",
       "bad.toml:2:11: probes.net.timeout: 1min is longer than the interval (30s)"},
      {"baselines not a table", "[probes.cpu]\nbaselines = [\"48ms\"]\n",
       R"(bad.toml:2:13: probes.cpu.baselines: expected a table like { "0123abcd0123abcd" = "48ms" }, got array)"},
      {"zero baseline", "[probes.cpu]\nbaselines = { \"0123abcd0123abcd\" = \"0ms\" }\n",
       "bad.toml:2:36: probes.cpu.baselines.0123abcd0123abcd: 0s is out of range (must be greater than 0s)"},
      {"bad baseline", "[probes.cpu]\nbaselines = { abc = \"fast\" }\n",
       R"(bad.toml:2:21: probes.cpu.baselines.abc: invalid duration "fast": expected a number with an optional unit, like "5min")"},
      {"empty fingerprint", "[probes.cpu]\nbaselines = { \"\" = \"48ms\" }\n",
       "bad.toml:2:15: probes.cpu.baselines: empty fingerprint"},
      {"reference_times not an array", "[probes.cpu]\nreference_times = { cpu = \"x\" }\n",
       R"(bad.toml:2:19: probes.cpu.reference_times: expected an array of tables like [{ cpu = "Xeon Gold 6248, 2.50GHz", fingerprint = "0123abcd0123abcd", seconds = 6.1 }], got table)"},
      {"reference time not a table", "[probes.cpu]\nreference_times = [6.1]\n",
       R"(bad.toml:2:20: probes.cpu.reference_times[0]: expected a table like [{ cpu = "Xeon Gold 6248, 2.50GHz", fingerprint = "0123abcd0123abcd", seconds = 6.1 }], got float)"},
      {"reference time without a fingerprint", "[probes.cpu]\nreference_times = [{ cpu = \"x\", seconds = 1 }]\n",
       R"(bad.toml:2:20: probes.cpu.reference_times[0]: missing key "fingerprint")"},
      {"reference time of zero seconds",
       "[[probes.cpu.reference_times]]\ncpu = \"x\"\nfingerprint = \"ab\"\nseconds = 0\n",
       "bad.toml:4:11: probes.cpu.reference_times[0].seconds: 0 is out of range (must be a number of seconds greater "
       "than 0, at most 1e6)"},
      {"unknown key in a reference time",
       "[probes.cpu]\nreference_times = [{ cpu = \"x\", fingerprint = \"ab\", seconds = 1, ghz = 2 }]\n",
       R"(bad.toml:2:66: unknown key "probes.cpu.reference_times[0].ghz")"},
      {"too many reference times",
       "[probes.cpu]\nreference_times = [" +
           [] {
             std::string items;
             for (int i = 0; i < 65; ++i) items += "{ cpu = \"x\", fingerprint = \"ab\", seconds = 1 },";
             return items;
           }() +
           "]\n",
       "bad.toml:2:19: probes.cpu.reference_times: 65 entries, at most 64"},
      {"first bad baseline in document order", "[probes.cpu]\nbaselines = { b = \"0s\", a = \"x\" }\n",
       "bad.toml:2:19: probes.cpu.baselines.b: 0s is out of range (must be greater than 0s)"},
      // Several errors: the earliest in the document wins, even though
      // "aaa" sorts before "zzz".
      {"first error in document order", "zzz = 1\naaa = 2\n", R"(bad.toml:1:1: unknown key "zzz")"},
      {"first error across sections", "[probes.net]\nports = []\n[api]\nbogus = 1\n",
       "bad.toml:2:9: probes.net.ports: must list at least one port"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto loaded = Load(c.toml, "bad.toml");
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error(), c.error);
  }
}

TEST(LoadFileTest, ReadsFileAndRecordsSource) {
  TempFile file("[probes.cpu]\ninterval = \"2min\"\n");
  const auto loaded = LoadConfigFile(file.path());
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->source, file.path().string());
  EXPECT_EQ(loaded->Section("cpu").schedule.interval, 2min);
}

TEST(LoadFileTest, ErrorsNameTheFile) {
  TempFile file("\n[probes.cpu]\ninterval = \"soon\"\n");
  const auto loaded = LoadConfigFile(file.path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error(), file.path().string() +
                                ":3:12: probes.cpu.interval: invalid duration \"soon\": expected a number with an "
                                "optional unit, like \"5min\"");
}

TEST(LoadFileTest, MissingFile) {
  const auto loaded = LoadConfigFile("/nonexistent/hostperf.toml");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error(), "/nonexistent/hostperf.toml: cannot read: No such file or directory");
}

TEST(LoadFileTest, Directory) {
  const fs::path dir = fs::temp_directory_path();
  const auto loaded = LoadConfigFile(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error(), dir.string() + ": is a directory, not a file");
}

// --config.file=/dev/zero once grew to 6.6 GB, and a FIFO blocked start-up.
TEST(LoadFileTest, DevicesAndFifosAreRefusedWithoutReading) {
  const auto zero = LoadConfigFile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error(), "/dev/zero: is a character device, not a regular file");
  const fs::path fifo = fs::temp_directory_path() / ("hostperf-config-fifo-" + std::to_string(::getpid()));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto piped = LoadConfigFile(fifo);  // returns at once: no writer needed
  fs::remove(fifo);
  ASSERT_FALSE(piped.ok());
  EXPECT_EQ(piped.error(), fifo.string() + ": is a FIFO (named pipe), not a regular file");
}

TEST(LoadFileTest, LargerThanTheCap) {
  TempFile file(std::string(kMaxConfigFileBytes + 1, '\n'));
  const auto loaded = LoadConfigFile(file.path());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error(), file.path().string() + ": larger than the cap of 4 MiB");
}

// TOML allows "\u0000"; a path with one would be cut short where the OS sees it.
TEST(LoadTest, NulInAStringIsRefusedWithTheKey) {
  const auto token = Load("[api]\ntoken_file = \"/etc/hostperf/tok\\u0000en\"\n", "c.toml");
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.error(), "c.toml:2:14: api.token_file: must not contain a NUL character (\\u0000)");
  const auto dirs = Load("[probes.disk]\ndirectories = [\"/data\", \"/d\\u0000x\"]\n", "c.toml");
  ASSERT_FALSE(dirs.ok());
  EXPECT_NE(dirs.error().find("probes.disk.directories[1]: must not contain a NUL character"), std::string::npos)
      << dirs.error();
  const auto state = Load("state_directory = \"/var/lib/x\\u0000\"\n", "c.toml");
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.error().find("state_directory: must not contain a NUL"), std::string::npos) << state.error();
}

// Seams that fail the test if the resolver consults them when it should not.
std::optional<std::string> NoEnv(const char*) { return std::nullopt; }

TEST(ResolveStateDirectoryTest, ConfiguredValueWins) {
  Config c = ProbeDefaults();
  c.state_directory = "/srv/hostperf";
  const auto env = [](const char*) -> std::optional<std::string> { return "/var/lib/from-env"; };
  const auto writable = [](const fs::path&) {
    ADD_FAILURE() << "writable check not expected";
    return true;
  };
  EXPECT_EQ(ResolveStateDirectory(c, env, writable), fs::path("/srv/hostperf"));
}

TEST(ResolveStateDirectoryTest, UsesStateDirectoryEnvironment) {
  std::string asked;
  const auto env = [&](const char* name) -> std::optional<std::string> {
    asked = name;
    return "/var/lib/hostperf-env";
  };
  const auto writable = [](const fs::path&) {
    ADD_FAILURE() << "writable check not expected";
    return true;
  };
  EXPECT_EQ(ResolveStateDirectory(ProbeDefaults(), env, writable), fs::path("/var/lib/hostperf-env"));
  EXPECT_EQ(asked, "STATE_DIRECTORY");
}

TEST(ResolveStateDirectoryTest, TakesFirstOfColonSeparatedList) {
  const auto env = [](const char*) -> std::optional<std::string> { return "/var/lib/a:/var/lib/b"; };
  EXPECT_EQ(ResolveStateDirectory(ProbeDefaults(), env, [](const fs::path&) { return true; }), fs::path("/var/lib/a"));
}

TEST(ResolveStateDirectoryTest, EnvUnsetAndWritable) {
  fs::path checked;
  const auto writable = [&](const fs::path& p) {
    checked = p;
    return true;
  };
  EXPECT_EQ(ResolveStateDirectory(ProbeDefaults(), NoEnv, writable), fs::path("/var/lib/hostperf"));
  EXPECT_EQ(checked, fs::path("/var/lib/hostperf"));
}

TEST(ResolveStateDirectoryTest, EnvUnsetAndNotWritable) {
  const auto result = ResolveStateDirectory(ProbeDefaults(), NoEnv, [](const fs::path&) { return false; });
  EXPECT_TRUE(result.is_absolute()) << result;
  EXPECT_EQ(result, fs::current_path() / "hostperf-state");
}

TEST(ResolveStateDirectoryTest, EmptyEnvIsIgnored) {
  const auto env = [](const char*) -> std::optional<std::string> { return ""; };
  EXPECT_EQ(ResolveStateDirectory(ProbeDefaults(), env, [](const fs::path&) { return true; }),
            fs::path("/var/lib/hostperf"));
}

TEST(ResolveStateDirectoryTest, DefaultSeamReadsProcessEnvironment) {
  const char* saved = ::getenv("STATE_DIRECTORY");
  const std::optional<std::string> previous = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("STATE_DIRECTORY", "/tmp/hostperf-default-seam:/other", 1);
  EXPECT_EQ(ResolveStateDirectory(ProbeDefaults()), fs::path("/tmp/hostperf-default-seam"));
  if (previous) {
    ::setenv("STATE_DIRECTORY", previous->c_str(), 1);
  } else {
    ::unsetenv("STATE_DIRECTORY");
  }
}

TEST(FullRunsTest, DefaultsAreAWeeklySundayWindowAndDisabled) {
  const Config defaults = ProbeDefaults();
  EXPECT_FALSE(defaults.full_runs.enabled);
  EXPECT_EQ(defaults.full_runs.every, 7 * 24h);
  EXPECT_EQ(defaults.full_runs.window_start, "Sun 02:00");
  EXPECT_EQ(defaults.full_runs.window_anchor, 3 * 24h + 2h);  // 1970-01-04 was the first Sunday
  EXPECT_EQ(defaults.full_runs.window, 4h);
  EXPECT_TRUE(defaults.full_runs.probes.empty());
  EXPECT_TRUE(defaults.full_runs.options_json.empty());
}

TEST(FullRunsTest, ReadsEveryKeyAndKeepsOptionsAsJson) {
  const auto loaded = Load(
      "[full_runs]\nenabled = true\nevery = \"336h\"\nwindow_start = \"Wed 22:30\"\nwindow = \"90min\"\n"
      "probes = [\"disk\", \"cpu\"]\nduration = 120\nhost = \"db-07\"\n"
      "[full_runs.options.disk]\ndirectories = [\"/data\"]\nthread_count = 2\ndisable_direct_io = true\n",
      "full.toml");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  const FullRunsConfig& runs = loaded->full_runs;
  EXPECT_TRUE(runs.enabled);
  EXPECT_EQ(runs.every, 14 * 24h);
  EXPECT_EQ(runs.window_start, "Wed 22:30");
  EXPECT_EQ(runs.window_anchor, 6 * 24h + 22h + 30min);  // 1970-01-07, the first Wednesday
  EXPECT_EQ(runs.window, 90min);
  EXPECT_EQ(runs.probes, (std::vector<std::string>{"disk", "cpu"}));
  EXPECT_EQ(runs.duration, "2min");
  EXPECT_EQ(runs.host, "db-07");
  ASSERT_EQ(runs.options_json.count("disk"), 1u);
  EXPECT_EQ(nlohmann::json::parse(runs.options_json.at("disk")),
            nlohmann::json({{"directories", {"/data"}}, {"thread_count", 2}, {"disable_direct_io", true}}));

  // Daily and accelerated calendars ("HH:MM" from 1970-01-01).
  const auto fast = Load("[full_runs]\nevery = \"20s\"\nwindow_start = \"00:00\"\nwindow = \"10s\"\n", "f.toml");
  ASSERT_TRUE(fast.ok()) << fast.error();
  EXPECT_EQ(fast->full_runs.window_anchor, 0s);
  const auto thursday = Load("[full_runs]\nwindow_start = \"Thu 01:00\"\n", "t.toml");
  ASSERT_TRUE(thursday.ok()) << thursday.error();
  EXPECT_EQ(thursday->full_runs.window_anchor, 1h);
}

TEST(FullRunsTest, RejectsBadCalendarsWithOneLine) {
  const std::vector<BadCase> cases = {
      {"weekday typo", "[full_runs]\nwindow_start = \"Sunday 02:00\"\n",
       R"(bad.toml:2:16: full_runs.window_start: "Sunday 02:00" is not "Ddd HH:MM" (Mon..Sun, 24-hour UTC, e.g. "Sun 02:00") or "HH:MM")"},
      {"hour out of range", "[full_runs]\nwindow_start = \"Sun 24:00\"\n",
       R"(bad.toml:2:16: full_runs.window_start: "Sun 24:00" is not "Ddd HH:MM" (Mon..Sun, 24-hour UTC, e.g. "Sun 02:00") or "HH:MM")"},
      {"weekday with a daily period", "[full_runs]\nevery = \"24h\"\n",
       R"(bad.toml:2:9: full_runs.every: 24h is not a whole number of weeks, which a weekday window_start ("Sun 02:00") needs; use "HH:MM" for shorter periods)"},
      {"daily start with a weekly period", "[full_runs]\nwindow_start = \"02:00\"\n",
       R"(bad.toml:2:16: full_runs.window_start: 168h does not divide a day, which a daily window_start ("02:00") needs (e.g. 24h, 6h, 20s); use "Ddd HH:MM" for weekly runs)"},
      {"period below a second", "[full_runs]\nevery = \"500ms\"\nwindow_start = \"00:00\"\n",
       "bad.toml:2:9: full_runs.every: 500ms is out of range (must be at least 1s)"},
      {"window longer than the period", "[full_runs]\nevery = \"20s\"\nwindow_start = \"00:00\"\nwindow = \"30s\"\n",
       "bad.toml:4:10: full_runs.window: the window (30s) is longer than the period (20s)"},
      {"unknown probe", "[full_runs]\nprobes = [\"cpu\", \"gpu\"]\n",
       "bad.toml:2:18: full_runs.probes[1]: unknown probe \"gpu\" (known: " + probes::KnownProbeNames() + ")"},
      {"probe twice", "[full_runs]\nprobes = [\"cpu\", \"cpu\"]\n",
       R"(bad.toml:2:18: full_runs.probes[1]: "cpu" is listed twice)"},
      {"enabled without probes", "[full_runs]\nenabled = true\n",
       R"(bad.toml:1:1: full_runs.probes: list the probes to run when enabled, e.g. ["disk"])"},
      {"options for a probe not run", "[full_runs]\nprobes = [\"cpu\"]\n[full_runs.options.disk]\nthread_count = 2\n",
       R"(bad.toml:3:20: full_runs.options.disk: "disk" is not one of full_runs.probes)"},
      {"zero duration", "[full_runs]\nduration = \"0s\"\n",
       "bad.toml:2:12: full_runs.duration: 0s is out of range (must be greater than 0s)"},
      {"unknown key", "[full_runs]\nwindow_end = \"06:00\"\n", R"(bad.toml:2:1: unknown key "full_runs.window_end")"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto loaded = Load(c.toml, "bad.toml");
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error(), c.error);
  }
}

}  // namespace
}  // namespace hostperf::config
