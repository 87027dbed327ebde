#include "directory_setup.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <random>
#include <system_error>
#include <utility>

#include "hostperf/config/units.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;

// The members of the stack with what each did (flat: a full run's result
// is printed on a CivetWeb worker's small stack when the run API serves it,
// and every level of nesting costs a recursion there; the leaves are one
// comma-separated string).
json MembersJson(const DirectoryStack& stack, const std::vector<MemberActivity>& activity) {
  json members = json::array();
  for (const auto& member : stack.members) {
    json entry = {{"device", member.device}, {"leaves", member.LeavesText()}};
    if (!member.model.empty()) entry["model"] = member.model;
    if (!member.serial.empty()) entry["serial"] = member.serial;
    for (const auto& done : activity) {
      if (done.device != member.device) continue;
      entry.update({{"read_ops", done.read_ops},
                    {"write_ops", done.write_ops},
                    {"read_bytes", done.read_bytes},
                    {"write_bytes", done.write_bytes}});
      if (done.read_seconds_per_op) entry["read_seconds_per_op"] = *done.read_seconds_per_op;
      if (done.write_seconds_per_op) entry["write_seconds_per_op"] = *done.write_seconds_per_op;
      if (done.read_ratio) entry["read_ratio"] = *done.read_ratio;
      if (done.write_ratio) entry["write_ratio"] = *done.write_ratio;
    }
    members.push_back(std::move(entry));
  }
  return members;
}

}  // namespace

std::uint64_t NewRunId() {
  static std::mt19937_64 generator{std::random_device{}()};
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return generator() & 0xffffffffffffULL;
}

Failure Stopped(const RunContext& context, const std::string& where) {
  return {context.Cancelled() ? "cancelled" : "timeout",
          std::string("disk run ") + (context.Cancelled() ? "cancelled" : "timed out") + where};
}

Result<std::unique_ptr<TestDirectory>> OpenDirectory(const DiskServices& services, const Plan& plan,
                                                     const std::string& path, json& dir_json) {
  const bool default_dir = plan.directories.size() == 1 && path == DefaultDirectory(services.state_directory);
  if (default_dir) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
  }
  auto opened = TestDirectory::Open(path, services.roots);
  if (!opened.ok()) return opened;
  if (const int removed = (*opened)->RemoveLeftovers(); removed > 0) {
    spdlog::info("disk probe: removed {} leftover scratch file(s) in {}", removed, path);
    dir_json["leftovers_removed"] = removed;
  }
  return opened;
}

std::unique_ptr<RunRecord> RecordScratchFiles(const DiskServices& services, const std::string& path,
                                              std::uint64_t run_id) {
  const std::filesystem::path& state = services.state_directory;
  std::error_code ec;
  if (state.empty() || !std::filesystem::is_directory(state, ec)) {
    spdlog::debug("disk probe: no state directory {} to record {} in", state.string(), path);
    return nullptr;
  }
  auto record = RunRecord::Create(state, path, run_id);
  if (record.ok()) return std::move(record).value();
  spdlog::warn(
      "disk probe: cannot record {} in the state directory ({}); a crash now would leave its scratch "
      "files for an operator to remove",
      path, record.error());
  return nullptr;
}

Result<void> CheckFreeSpace(const Plan& plan, const TestDirectory& dir, const std::string& path, std::uint64_t total) {
  const std::uint64_t free = dir.FreeBytes();
  if (free < total + plan.reserve) {
    return Failure{"no_space",
                   fmt::format("\"{}\" has {} free; the test needs {} plus a reserve of {}", path,
                               config::FormatSize(free), config::FormatSize(total), config::FormatSize(plan.reserve))};
  }
  return {};
}

std::optional<MemberSampler> StartMembers(const DiskServices& services, const std::string& path) {
  auto stack = ResolveDirectoryStack(path, services.roots);
  if (!stack) {
    spdlog::debug("disk probe: no block devices to attribute for {}: {}", path, stack.error());
    return std::nullopt;
  }
  MemberSampler sampler(std::move(stack).value(), services.roots);
  sampler.Begin();
  return sampler;
}

void RecordMembers(const DiskServices& services, const Plan& plan, const std::string& path,
                   const MemberSampler& sampler, const Feedback& feedback, json& dir_json) {
  const auto activity = sampler.End();
  const DirectoryStack& stack = sampler.stack();
  const json members = MembersJson(stack, activity);
  const auto findings = SlowMemberFindings(activity, plan.member_slow_ratio);
  dir_json.update({{"array_stack", stack.top},
                   {"array_kind", stack.kind},
                   {"members", members},
                   {"slow_members", findings},
                   {"member_slow_ratio", plan.member_slow_ratio}});
  for (const auto& finding : findings) spdlog::warn("disk probe: array behind {}: {}", path, finding);
  feedback.Report("members", {{"directory", path},
                              {"stack", stack.top},
                              {"kind", stack.kind},
                              {"members", members},
                              {"slow_members", findings}});
  services.metrics.RecordMembers(plan.generation, path, stack, activity);
}

}  // namespace hostperf::probes::disk
