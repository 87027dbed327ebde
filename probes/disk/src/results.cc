#include "hostperf/probes/disk/results.h"

#include "hostperf/probes/figures.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;

const json& Member(const json& object, const char* key) {
  static const json kNone;
  if (!object.is_object()) return kNone;
  const auto it = object.find(key);
  return it == object.end() ? kNone : *it;
}

// A test summary's figures under `bytes_key`.
std::optional<TestThroughput> Figures(const json& entry, const char* bytes_key) {
  const auto bytes = NumberField(entry, bytes_key);
  const auto seconds = NumberField(entry, "seconds");
  if (!bytes || !seconds) return std::nullopt;
  return TestThroughput{*bytes, *seconds, NumberField(entry, "started_unix_seconds"),
                        NumberField(entry, "finished_unix_seconds")};
}

void Add(std::optional<TestThroughput>& sum, const std::optional<TestThroughput>& part) {
  if (!part) return;
  if (!sum) sum = TestThroughput{};
  sum->bytes += part->bytes;
  sum->seconds += part->seconds;
  sum->started_unix_seconds.reset();  // a sum has no single interval
  sum->finished_unix_seconds.reset();
}

std::optional<TestThroughput> Positive(const std::optional<TestThroughput>& figures) {
  if (!figures || figures->seconds <= 0) return std::nullopt;
  return figures;
}

}  // namespace

std::vector<DirectoryThroughput> ReadDirectoryThroughput(const json& result) {
  std::vector<DirectoryThroughput> directories;
  for (const json& directory : ArrayField(result, "directories")) {
    // The gpcheckperf method: one pass of each.
    DirectoryThroughput out{TextField(directory, "directory"), Figures(Member(directory, "write"), "bytes"),
                            Figures(Member(directory, "read"), "bytes")};
    for (const json& test : ArrayField(directory, "tests")) {
      const std::string name = TextField(test, "test");
      // Several entries of one test add up.
      if (name == "Write") Add(out.write, Figures(test, "bytes_written"));
      if (name == "Read") Add(out.read, Figures(test, "bytes_read"));
    }
    directories.push_back(std::move(out));
  }
  return directories;
}

SequentialThroughput ReadSequentialThroughput(const json& result) {
  const json& sequential = Member(result, "sequential");
  SequentialThroughput out{Figures(Member(sequential, "write"), "bytes"), Figures(Member(sequential, "read"), "bytes")};
  if (!out.write || !out.read) {
    SequentialThroughput sum;
    for (const DirectoryThroughput& directory : ReadDirectoryThroughput(result)) {
      Add(sum.write, directory.write);
      Add(sum.read, directory.read);
    }
    if (!out.write) out.write = sum.write;
    if (!out.read) out.read = sum.read;
  }
  return {Positive(out.write), Positive(out.read)};
}

}  // namespace hostperf::probes::disk
