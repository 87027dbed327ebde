#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::disk {

// Attribution inside a host (the gpcheckperf field report's "one disk in the
// array starts to under perform but doesn't fail out"): the block devices
// under a probed directory, and what each of them did during our own runs,
// read from the kernel's per-device counters. No extra I/O.
//
// Stacks resolved from sysfs: a partition to its disk; a device with slaves
// (md, device-mapper) to them; a multi-device btrfs to its devices
// (/sys/fs/btrfs/<fsid>/devices); a loop device to its backing file's device
// where that is a block device. The first level with two or more devices is
// the array, and its devices are the members compared with each other; each
// member's physical disks (the leaves below it) name what to replace.

// One member of the array behind a directory.
struct BlockMember {
  std::string device;               // as in /sys/class/block: "sdc", "md0", "loop3"
  std::vector<std::string> leaves;  // the physical disks below it ("sdc" itself for a disk)
  std::string model;                // of the first leaf, where sysfs shows it
  std::string serial;               // of the first leaf (serial, else wwid)

  // The leaves as one comma-separated string: the info metric's label and
  // the result's field (flat, see DiskProbe's member report).
  std::string LeavesText() const;
};

struct DirectoryStack {
  std::string top;                   // the file system's device ("sda1", "dm-0"), or "btrfs:<fsid>"
  std::string kind;                  // "btrfs", "md" (any device with slaves), "single"
  std::vector<BlockMember> members;  // 2 or more: an array; 1: a single device
};

// The stack under `directory`: its file system's device from
// <proc>/self/mountinfo (the longest mount point that contains it), then
// sysfs below <sys>. An error when the directory is on no block device
// (tmpfs, NFS, overlay): the caller then has nothing to attribute.
Result<DirectoryStack> ResolveDirectoryStack(const std::filesystem::path& directory, const SystemRoots& roots);

// The stack below one block device (by its /sys/class/block name). Exposed
// for tests with fixture trees.
DirectoryStack ResolveDeviceStack(const std::string& device, const SystemRoots& roots);

// What kind of storage holds `directory`, as a label value the fleet
// comparison groups by (like is compared with like without any config):
// "<media>_<transport>_<filesystem>", e.g. "ssd_nvme_ext4", "hdd_sata_xfs",
// "ram_none_tmpfs". Read from <proc>/self/mountinfo (the file system type
// and device) and sysfs below <sys>, through the same stack resolution as
// the members (ResolveDirectoryStack): the physical disks at the bottom of
// the stack decide, and when they disagree (an md array of an SSD and an
// HDD) that part is "mixed".
//   media: hdd (queue/rotational 1), ssd (0), ram (zram, brd, tmpfs, a loop
//     file on tmpfs), mixed, unknown;
//   transport: nvme, sata, sas, scsi, virtio, usb, mmc, loop (a loop file),
//     none (RAM), mixed, unknown (from the disk's sysfs path);
//   filesystem: the mount's type, "unknown" when no mount holds it.
// Only [a-z0-9_], at most kMaxDeviceClassLength characters.
inline constexpr std::size_t kMaxDeviceClassLength = 48;
std::string DeviceClassOf(const std::filesystem::path& directory, const SystemRoots& roots);

// A device's counters from <sys>/class/block/<device>/stat.
struct DeviceCounters {
  std::uint64_t read_ops = 0;
  std::uint64_t read_sectors = 0;
  std::uint64_t read_ms = 0;
  std::uint64_t write_ops = 0;
  std::uint64_t write_sectors = 0;
  std::uint64_t write_ms = 0;
};
std::optional<DeviceCounters> ReadDeviceCounters(const std::string& device, const SystemRoots& roots);

// What a member did between two readings, and how it compares with its
// siblings: seconds per operation over the median of the other members'
// (members with at least kMinMemberOps operations of that kind count).
struct MemberActivity {
  std::string device;
  std::uint64_t read_ops = 0;
  std::uint64_t write_ops = 0;
  std::uint64_t read_bytes = 0;
  std::uint64_t write_bytes = 0;
  std::optional<double> read_seconds_per_op;
  std::optional<double> write_seconds_per_op;
  std::optional<double> read_ratio;  // to the siblings' median
  std::optional<double> write_ratio;
};
inline constexpr std::uint64_t kMinMemberOps = 8;

// Per member, the difference of `after` and `before` (members missing from
// either are left out), with the sibling ratios.
std::vector<MemberActivity> CompareMembers(const std::map<std::string, DeviceCounters>& before,
                                           const std::map<std::string, DeviceCounters>& after);

// "member loop3 serves reads 51.2× slower than its 3 siblings" for each
// member at or above `ratio` (one line per member and direction).
std::vector<std::string> SlowMemberFindings(const std::vector<MemberActivity>& activity, double ratio);

// Reads every member's counters around a run.
class MemberSampler {
 public:
  MemberSampler(DirectoryStack stack, SystemRoots roots) : stack_(std::move(stack)), roots_(std::move(roots)) {}
  void Begin() { before_ = Read(); }
  std::vector<MemberActivity> End() const { return CompareMembers(before_, Read()); }
  const DirectoryStack& stack() const { return stack_; }

 private:
  std::map<std::string, DeviceCounters> Read() const;
  DirectoryStack stack_;
  SystemRoots roots_;
  std::map<std::string, DeviceCounters> before_;
};

}  // namespace hostperf::probes::disk
