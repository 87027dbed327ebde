#include "hostperf/probes/disk/members.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

namespace hostperf::probes::disk {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxDepth = 16;        // stacks deeper than this are cycles or nonsense
constexpr std::size_t kMaxLabelLength = 64;  // model and serial go into labels
// A sibling median below this (the counters tick in milliseconds) is taken
// as this, so that a fast array's near-zero times do not make any member
// "infinitely" slower.
constexpr double kMinSiblingSecondsPerOp = 1e-4;

std::string FirstLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// Printable ASCII only, bounded: these become label values.
std::string Clean(std::string text) {
  text.erase(std::remove_if(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c > 0x7e; }),
             text.end());
  const auto start = text.find_first_not_of(' ');
  text = start == std::string::npos ? "" : text.substr(start);
  if (text.size() > kMaxLabelLength) text.resize(kMaxLabelLength);
  return text;
}

fs::path BlockDir(const SystemRoots& roots, const std::string& device) {
  return roots.sys / "class" / "block" / device;
}

std::vector<std::string> Slaves(const SystemRoots& roots, const std::string& device) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(BlockDir(roots, device) / "slaves", ec)) {
    out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The disk a partition belongs to: the parent folder of its sysfs node.
std::optional<std::string> PartitionParent(const SystemRoots& roots, const std::string& device) {
  std::error_code ec;
  if (!fs::exists(BlockDir(roots, device) / "partition", ec)) return std::nullopt;
  const fs::path real = fs::canonical(BlockDir(roots, device), ec);
  if (ec) return std::nullopt;
  return real.parent_path().filename().string();
}

// The block device by major:minor (<sys>/dev/block/M:m links to its node).
std::optional<std::string> DeviceByNumber(const SystemRoots& roots, unsigned major_number, unsigned minor_number) {
  std::error_code ec;
  const fs::path real =
      fs::canonical(roots.sys / "dev" / "block" / fmt::format("{}:{}", major_number, minor_number), ec);
  if (ec) return std::nullopt;
  return real.filename().string();
}

// A loop device's backing file's block device, when it has one (a file on
// tmpfs has none: the loop device is then the leaf).
std::optional<std::string> LoopBacking(const SystemRoots& roots, const std::string& device) {
  const std::string backing = FirstLine(BlockDir(roots, device) / "loop" / "backing_file");
  if (backing.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(backing.c_str(), &st) != 0 || major(st.st_dev) == 0) return std::nullopt;
  return DeviceByNumber(roots, major(st.st_dev), minor(st.st_dev));
}

// The devices one level down: a partition's disk, the slaves, a loop
// device's backing device; none for a leaf.
std::vector<std::string> Below(const SystemRoots& roots, const std::string& device) {
  if (auto parent = PartitionParent(roots, device)) return {*parent};
  if (auto slaves = Slaves(roots, device); !slaves.empty()) return slaves;
  if (auto backing = LoopBacking(roots, device); backing && *backing != device) return {*backing};
  return {};
}

void CollectLeaves(const SystemRoots& roots, const std::string& device, std::size_t depth,
                   std::vector<std::string>& out) {
  const auto below = depth < kMaxDepth ? Below(roots, device) : std::vector<std::string>{};
  if (below.empty()) {
    if (std::find(out.begin(), out.end(), device) == out.end()) out.push_back(device);
    return;
  }
  for (const auto& next : below) CollectLeaves(roots, next, depth + 1, out);
}

BlockMember Member(const SystemRoots& roots, const std::string& device) {
  BlockMember member;
  member.device = device;
  CollectLeaves(roots, device, 0, member.leaves);
  if (!member.leaves.empty()) {
    const fs::path leaf = BlockDir(roots, member.leaves.front());
    member.model = Clean(FirstLine(leaf / "device" / "model"));
    member.serial = Clean(FirstLine(leaf / "device" / "serial"));
    if (member.serial.empty()) member.serial = Clean(FirstLine(leaf / "wwid"));
    if (member.serial.empty()) member.serial = Clean(FirstLine(leaf / "device" / "wwid"));
  }
  return member;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct Mount {
  unsigned major_number = 0;
  unsigned minor_number = 0;
  std::string point;
  std::string type;
  std::string source;
};

bool Contains(const std::string& point, const std::string& path) {
  if (point == "/") return true;
  return path == point || (path.rfind(point, 0) == 0 && path.size() > point.size() && path[point.size()] == '/');
}

std::optional<Mount> MountOf(const SystemRoots& roots, const std::string& path) {
  std::ifstream in(roots.proc / "self" / "mountinfo");
  std::optional<Mount> best;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, numbers, root, point;
    if (!(fields >> id >> parent >> numbers >> root >> point)) continue;
    std::string word;
    while (fields >> word && word != "-") {
    }
    Mount mount;
    if (!(fields >> mount.type >> mount.source)) continue;
    mount.point = Unescape(point);
    mount.source = Unescape(mount.source);
    if (std::sscanf(numbers.c_str(), "%u:%u", &mount.major_number, &mount.minor_number) != 2) continue;
    // The longest containing mount point; a later line for the same point
    // (mounted over) wins.
    if (Contains(mount.point, path) && (!best || mount.point.size() >= best->point.size())) best = mount;
  }
  return best;
}

}  // namespace

std::string BlockMember::LeavesText() const { return fmt::format("{}", fmt::join(leaves, ",")); }

DirectoryStack ResolveDeviceStack(const std::string& device, const SystemRoots& roots) {
  DirectoryStack stack;
  stack.top = device;
  stack.kind = "single";
  // Down through single-device layers (partition, dm-crypt, one-disk LVM,
  // a loop file) to the first level with two or more devices: the array.
  std::string current = device;
  for (std::size_t depth = 0; depth < kMaxDepth; ++depth) {
    const auto below = Below(roots, current);
    if (below.size() >= 2) {
      stack.kind = "md";
      for (const auto& member : below) stack.members.push_back(Member(roots, member));
      return stack;
    }
    if (below.empty()) break;
    current = below.front();
  }
  stack.members.push_back(Member(roots, device));
  return stack;
}

Result<DirectoryStack> ResolveDirectoryStack(const fs::path& directory, const SystemRoots& roots) {
  using R = Result<DirectoryStack>;
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(directory, ec), ec);
  const auto mount = MountOf(roots, real.string());
  if (!mount) return R::Error("no mount holds " + real.string());
  if (mount->type == "btrfs") {
    // A multi-device btrfs lists its devices by name under its fsid.
    std::string source = mount->source;
    if (const fs::path resolved = fs::canonical(source, ec); !ec) source = resolved.string();
    const std::string name = fs::path(source).filename().string();
    for (const auto& fsid : fs::directory_iterator(roots.sys / "fs" / "btrfs", ec)) {
      if (!fs::exists(fsid.path() / "devices" / name, ec)) continue;
      DirectoryStack stack;
      stack.top = "btrfs:" + fsid.path().filename().string();
      stack.kind = "btrfs";
      std::vector<std::string> devices;
      for (const auto& entry : fs::directory_iterator(fsid.path() / "devices", ec)) {
        devices.push_back(entry.path().filename().string());
      }
      std::sort(devices.begin(), devices.end());
      for (const auto& device : devices) stack.members.push_back(Member(roots, device));
      return stack;
    }
  }
  if (mount->major_number == 0) {
    return R::Error(fmt::format("{} is on {} ({}), not a block device", real.string(), mount->source, mount->type));
  }
  const auto device = DeviceByNumber(roots, mount->major_number, mount->minor_number);
  if (!device) {
    return R::Error(fmt::format("no block device {}:{} in {}", mount->major_number, mount->minor_number,
                                (roots.sys / "dev" / "block").string()));
  }
  return ResolveDeviceStack(*device, roots);
}

namespace {

// [a-z0-9_] only ("fuse.sshfs" -> "fuse_sshfs"), at most `max` characters.
std::string LabelWord(std::string_view text, std::size_t max) {
  std::string out;
  for (const char c : text) {
    if (out.size() >= max) break;
    const auto byte = static_cast<unsigned char>(c);
    const bool keep = (byte >= 'a' && byte <= 'z') || (byte >= '0' && byte <= '9');
    const bool upper = byte >= 'A' && byte <= 'Z';
    out += keep ? c : upper ? static_cast<char>(byte - 'A' + 'a') : '_';
  }
  return out.empty() ? "unknown" : out;
}

bool RamFilesystem(const std::string& type) { return type == "tmpfs" || type == "ramfs"; }

struct LeafClass {
  std::string media;
  std::string transport;
};

// Where a disk hangs: its sysfs node's path (/sys/devices/pci.../ata1/host0/
// target0:0:0/0:0:0:0/block/sda) names the bus. Checked from the most
// specific (USB and SATA disks sit on a SCSI host too) to the least.
std::string TransportOf(const SystemRoots& roots, const std::string& leaf) {
  if (leaf.starts_with("nvme")) return "nvme";
  if (leaf.starts_with("mmcblk")) return "mmc";
  if (leaf.starts_with("loop")) return "loop";
  std::error_code ec;
  const fs::path real = fs::canonical(BlockDir(roots, leaf), ec);
  if (ec) return "unknown";
  std::string transport = "unknown";
  for (const auto& part : real.lexically_relative(roots.sys)) {
    const std::string name = part.string();
    const auto is = [&](std::string_view prefix) {
      return name.starts_with(prefix) && name.size() > prefix.size() &&
             std::isdigit(static_cast<unsigned char>(name[prefix.size()]));
    };
    if (name == "nvme" || is("nvme")) return "nvme";
    if (is("usb")) return "usb";
    if (is("mmc") || name == "mmc_host") return "mmc";
    if (is("virtio")) return "virtio";
    if (is("ata")) return "sata";
    if (name.starts_with("end_device-") || name.starts_with("port-")) transport = "sas";
    if (is("host") && transport == "unknown") transport = "scsi";
  }
  return transport;
}

LeafClass ClassOfLeaf(const SystemRoots& roots, const std::string& leaf) {
  // zram, and brd's ram0, ram1...: memory, whatever their queue says.
  const bool brd = leaf.starts_with("ram") && leaf.size() > 3 && std::isdigit(static_cast<unsigned char>(leaf[3]));
  if (leaf.starts_with("zram") || brd) return {"ram", "none"};
  LeafClass out{"unknown", TransportOf(roots, leaf)};
  if (out.transport == "loop") {
    // A loop device that is a leaf has no block device below it: its file
    // is on RAM (tmpfs) or on something sysfs cannot follow.
    const std::string backing = FirstLine(BlockDir(roots, leaf) / "loop" / "backing_file");
    if (const auto mount = backing.empty() ? std::nullopt : MountOf(roots, backing);
        mount && RamFilesystem(mount->type)) {
      out.media = "ram";
    }
    return out;
  }
  const std::string rotational = FirstLine(BlockDir(roots, leaf) / "queue" / "rotational");
  if (rotational == "1") out.media = "hdd";
  if (rotational == "0") out.media = "ssd";
  return out;
}

}  // namespace

std::string DeviceClassOf(const fs::path& directory, const SystemRoots& roots) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(fs::absolute(directory, ec), ec);
  const auto mount = MountOf(roots, real.string());
  if (!mount) return "unknown_unknown_unknown";
  const std::string filesystem = LabelWord(mount->type, 16);
  std::string media = "unknown";
  std::string transport = "unknown";
  if (RamFilesystem(mount->type)) {
    media = "ram";
    transport = "none";
  } else if (auto stack = ResolveDirectoryStack(directory, roots)) {
    std::set<std::string> medias;
    std::set<std::string> transports;
    for (const BlockMember& member : stack->members) {
      for (const std::string& leaf : member.leaves) {
        const LeafClass leaf_class = ClassOfLeaf(roots, leaf);
        medias.insert(leaf_class.media);
        transports.insert(leaf_class.transport);
      }
    }
    const auto agreed = [](const std::set<std::string>& values) {
      return values.empty() ? std::string("unknown") : values.size() == 1 ? *values.begin() : std::string("mixed");
    };
    media = agreed(medias);
    transport = agreed(transports);
  }
  std::string label = media + "_" + transport + "_" + filesystem;
  if (label.size() > kMaxDeviceClassLength) label.resize(kMaxDeviceClassLength);
  return label;
}

std::optional<DeviceCounters> ReadDeviceCounters(const std::string& device, const SystemRoots& roots) {
  std::ifstream in(BlockDir(roots, device) / "stat");
  std::uint64_t field[8] = {};
  for (auto& value : field) {
    if (!(in >> value)) return std::nullopt;
  }
  // Documentation/block/stat.rst: reads, merges, sectors, ms; writes, ...
  return DeviceCounters{field[0], field[2], field[3], field[4], field[6], field[7]};
}

std::vector<MemberActivity> CompareMembers(const std::map<std::string, DeviceCounters>& before,
                                           const std::map<std::string, DeviceCounters>& after) {
  std::vector<MemberActivity> out;
  const auto delta = [](std::uint64_t a, std::uint64_t b) { return b >= a ? b - a : 0; };
  const auto per_op = [](std::uint64_t ms, std::uint64_t ops) -> std::optional<double> {
    if (ops < kMinMemberOps) return std::nullopt;
    return static_cast<double>(ms) / 1000.0 / static_cast<double>(ops);
  };
  for (const auto& [device, end] : after) {
    const auto start = before.find(device);
    if (start == before.end()) continue;
    MemberActivity activity;
    activity.device = device;
    activity.read_ops = delta(start->second.read_ops, end.read_ops);
    activity.write_ops = delta(start->second.write_ops, end.write_ops);
    activity.read_bytes = 512 * delta(start->second.read_sectors, end.read_sectors);
    activity.write_bytes = 512 * delta(start->second.write_sectors, end.write_sectors);
    activity.read_seconds_per_op = per_op(delta(start->second.read_ms, end.read_ms), activity.read_ops);
    activity.write_seconds_per_op = per_op(delta(start->second.write_ms, end.write_ms), activity.write_ops);
    out.push_back(std::move(activity));
  }
  // Each member against the median of the others (not of all: in a pair
  // the slow one would raise its own reference).
  const auto ratio = [&](std::size_t self, std::optional<double> MemberActivity::*field) -> std::optional<double> {
    if (!(out[self].*field)) return std::nullopt;
    std::vector<double> others;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (i != self && out[i].*field) others.push_back(*(out[i].*field));
    }
    if (others.empty()) return std::nullopt;
    std::sort(others.begin(), others.end());
    const std::size_t n = others.size();
    const double median = n % 2 == 1 ? others[n / 2] : (others[n / 2 - 1] + others[n / 2]) / 2;
    return *(out[self].*field) / std::max(median, kMinSiblingSecondsPerOp);
  };
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].read_ratio = ratio(i, &MemberActivity::read_seconds_per_op);
    out[i].write_ratio = ratio(i, &MemberActivity::write_seconds_per_op);
  }
  return out;
}

std::vector<std::string> SlowMemberFindings(const std::vector<MemberActivity>& activity, double ratio) {
  std::vector<std::string> out;
  const auto siblings = [&](std::optional<double> MemberActivity::*field, const std::string& self) {
    return std::count_if(activity.begin(), activity.end(),
                         [&](const MemberActivity& other) { return other.device != self && (other.*field); });
  };
  for (const auto& member : activity) {
    if (member.read_ratio && *member.read_ratio >= ratio) {
      out.push_back(fmt::format("member {} serves reads {:.1f}× slower than its {} siblings", member.device,
                                *member.read_ratio, siblings(&MemberActivity::read_seconds_per_op, member.device)));
    }
    if (member.write_ratio && *member.write_ratio >= ratio) {
      out.push_back(fmt::format("member {} serves writes {:.1f}× slower than its {} siblings", member.device,
                                *member.write_ratio, siblings(&MemberActivity::write_seconds_per_op, member.device)));
    }
  }
  return out;
}

std::map<std::string, DeviceCounters> MemberSampler::Read() const {
  std::map<std::string, DeviceCounters> out;
  for (const auto& member : stack_.members) {
    if (auto counters = ReadDeviceCounters(member.device, roots_)) out.emplace(member.device, *counters);
  }
  return out;
}

}  // namespace hostperf::probes::disk
