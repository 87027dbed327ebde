// The block devices behind a directory (sysfs and mountinfo in a fixture tree
// built per test) and the comparison of members' service times. The real
// stack (btrfs over loop devices, one throttled) is in
// tests/integration/disk_members_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "hostperf/probes/disk/members.h"
#include "temp_dir.h"

namespace hostperf::probes::disk {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

// A sysfs as the kernel lays it out: nodes under devices/, links to them in
// class/block/ and dev/block/, slaves/ links between them.
class FakeSysfs {
 public:
  FakeSysfs() {
    roots_.sys = dir_.path() / "sys";
    roots_.proc = dir_.path() / "proc";
    fs::create_directories(roots_.sys / "class" / "block");
    fs::create_directories(roots_.sys / "dev" / "block");
    fs::create_directories(roots_.proc / "self");
  }

  // A whole disk with a model and a serial.
  void Disk(const std::string& name, const std::string& numbers, const std::string& model = "",
            const std::string& serial = "") {
    const fs::path node = roots_.sys / "devices" / "pci0000:00" / "host0" / "block" / name;
    fs::create_directories(node / "device");
    if (!model.empty()) Write(node / "device" / "model", model + "   \n");
    if (!serial.empty()) Write(node / "device" / "serial", serial + "\n");
    Link(node, name, numbers);
  }
  // A disk at its bus's place in devices/ (`parent`: the folder holding
  // block/<name>), with queue/rotational when given.
  void DiskAt(const std::string& name, const std::string& numbers, const std::string& parent,
              const std::string& rotational = "") {
    const fs::path node = roots_.sys / parent / "block" / name;
    fs::create_directories(node / "queue");
    if (!rotational.empty()) Write(node / "queue" / "rotational", rotational + "\n");
    Link(node, name, numbers);
  }
  void Write(const std::string& name, const std::string& file, const std::string& text) {
    fs::create_directories((Node(name) / file).parent_path());
    Write(Node(name) / file, text);
  }
  void Partition(const std::string& disk, const std::string& name, const std::string& numbers) {
    const fs::path node = Node(disk) / name;
    fs::create_directories(node);
    Write(node / "partition", "1\n");
    Link(node, name, numbers);
  }
  // md, dm: a virtual device over `slaves`.
  void Virtual(const std::string& name, const std::string& numbers, const std::vector<std::string>& slaves) {
    const fs::path node = roots_.sys / "devices" / "virtual" / "block" / name;
    fs::create_directories(node / "slaves");
    for (const auto& slave : slaves) fs::create_directory_symlink(Node(slave), node / "slaves" / slave);
    Link(node, name, numbers);
  }
  void Stat(const std::string& name, const std::string& line) { Write(Node(name) / "stat", line + "\n"); }
  void Btrfs(const std::string& fsid, const std::vector<std::string>& devices) {
    const fs::path dir = roots_.sys / "fs" / "btrfs" / fsid / "devices";
    fs::create_directories(dir);
    for (const auto& device : devices) fs::create_directory_symlink(Node(device), dir / device);
  }
  void MountInfo(const std::string& text) { Write(roots_.proc / "self" / "mountinfo", text); }

  fs::path Node(const std::string& name) const { return fs::canonical(roots_.sys / "class" / "block" / name); }
  const SystemRoots& roots() const { return roots_; }

 private:
  static void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  void Link(const fs::path& node, const std::string& name, const std::string& numbers) {
    fs::create_directory_symlink(node, roots_.sys / "class" / "block" / name);
    fs::create_directory_symlink(node, roots_.sys / "dev" / "block" / numbers);
  }

  test_support::TempDir dir_;
  SystemRoots roots_;
};

// md0 over a partition of each of three disks, LVM (dm-0) on top.
void MdArray(FakeSysfs& sys) {
  sys.Disk("sda", "8:0", "ST8000NM0055", "ZA1A0001");
  sys.Disk("sdb", "8:16", "ST8000NM0055", "ZA1A0002");
  sys.Disk("sdc", "8:32", "ST8000NM0055", "ZA1A0003");
  sys.Partition("sda", "sda1", "8:1");
  sys.Partition("sdb", "sdb1", "8:17");
  sys.Partition("sdc", "sdc1", "8:33");
  sys.Virtual("md0", "9:0", {"sda1", "sdb1", "sdc1"});
  sys.Virtual("dm-0", "253:0", {"md0"});
}

TEST(DiskMembersTest, MdArrayUnderLvmResolvesToItsPartitionsAndDisks) {
  FakeSysfs sys;
  MdArray(sys);
  const DirectoryStack stack = ResolveDeviceStack("dm-0", sys.roots());
  EXPECT_EQ(stack.top, "dm-0");
  EXPECT_EQ(stack.kind, "md");
  ASSERT_EQ(stack.members.size(), 3u);
  EXPECT_EQ(stack.members[2].device, "sdc1");
  EXPECT_THAT(stack.members[2].leaves, ElementsAre("sdc"));
  EXPECT_EQ(stack.members[2].model, "ST8000NM0055");
  EXPECT_EQ(stack.members[2].serial, "ZA1A0003");
}

TEST(DiskMembersTest, SingleDiskIsOneMemberWithItsDisk) {
  FakeSysfs sys;
  MdArray(sys);
  const DirectoryStack stack = ResolveDeviceStack("sdb1", sys.roots());
  EXPECT_EQ(stack.kind, "single");
  ASSERT_EQ(stack.members.size(), 1u);
  EXPECT_EQ(stack.members[0].device, "sdb1");
  EXPECT_THAT(stack.members[0].leaves, ElementsAre("sdb"));
}

TEST(DiskMembersTest, DirectoryResolvesThroughMountinfo) {
  FakeSysfs sys;
  MdArray(sys);
  sys.Disk("loop9", "7:9");
  sys.Disk("loop10", "7:10");
  sys.Btrfs("44b505e9-f7a7-4b91-bffb-d521a99f7f86", {"loop9", "loop10"});
  sys.MountInfo(
      "22 1 8:2 / / rw,relatime - ext4 /dev/sda2 rw\n"
      "40 22 253:0 / /data rw,relatime - xfs /dev/mapper/vg-data rw\n"
      "41 22 0:45 / /data/tmp rw - tmpfs tmpfs rw\n"
      "46 22 0:40 / /mnt/array\\040one rw - btrfs /dev/loop9 rw,space_cache=v2\n");
  const auto data = ResolveDirectoryStack("/data/warehouse", sys.roots());
  ASSERT_TRUE(data.ok()) << data.error();
  EXPECT_EQ(data->kind, "md");
  EXPECT_EQ(data->members.size(), 3u);

  const auto tmp = ResolveDirectoryStack("/data/tmp/x", sys.roots());
  ASSERT_FALSE(tmp.ok());
  EXPECT_THAT(tmp.error(), ::testing::HasSubstr("not a block device"));

  const auto array = ResolveDirectoryStack("/mnt/array one/db", sys.roots());
  ASSERT_TRUE(array.ok()) << array.error();
  EXPECT_EQ(array->kind, "btrfs");
  EXPECT_EQ(array->top, "btrfs:44b505e9-f7a7-4b91-bffb-d521a99f7f86");
  ASSERT_EQ(array->members.size(), 2u);
  EXPECT_EQ(array->members[0].device, "loop10");
  EXPECT_EQ(array->members[1].device, "loop9");
}

// The device class the fleet comparison groups by, read from the
// mount and the disks at the bottom of the stack.
TEST(DiskDeviceClassTest, MediaTransportAndFilesystemFromSysfs) {
  FakeSysfs sys;
  sys.DiskAt("nvme0n1", "259:0", "devices/pci0000:00/0000:00:1d.0/nvme/nvme0", "0");
  sys.Partition("nvme0n1", "nvme0n1p1", "259:1");
  sys.DiskAt("sdd", "8:48", "devices/pci0000:00/0000:00:1f.2/ata3/host2/target2:0:0/2:0:0:0", "1");
  sys.DiskAt("sde", "8:64", "devices/pci0000:00/0000:00:1f.2/ata4/host3/target3:0:0/3:0:0:0", "1");
  sys.DiskAt("sdf", "8:80", "devices/pci0000:00/0000:03:00.0/host0/port-0:0/end_device-0:0/target0:0:0/0:0:0:0", "1");
  sys.DiskAt("sdg", "8:96", "devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0", "0");
  sys.DiskAt("sdh", "8:112", "devices/pci0000:00/0000:00:10.0/host7/target7:0:0/7:0:0:0", "0");
  sys.DiskAt("vda", "254:0", "devices/pci0000:00/0000:00:04.0/virtio1", "1");
  sys.DiskAt("mmcblk0", "179:0", "devices/platform/fe320000.mmc/mmc_host/mmc0/mmc0:aaaa", "0");
  sys.DiskAt("zram0", "252:0", "devices/virtual", "0");
  sys.DiskAt("loop3", "7:3", "devices/virtual", "1");
  sys.Write("loop3", "loop/backing_file", "/nonexistent-shm/disk.img\n");
  sys.Virtual("md1", "9:1", {"sdd", "sde"});        // two SATA HDDs agree
  sys.Virtual("md2", "9:2", {"sdd", "nvme0n1p1"});  // an HDD and an NVMe SSD do not
  sys.MountInfo(
      "22 1 259:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw\n"
      "30 22 8:48 / /hdd rw - xfs /dev/sdd rw\n"
      "31 22 9:1 / /md rw - ext4 /dev/md1 rw\n"
      "32 22 9:2 / /mixed rw - ext4 /dev/md2 rw\n"
      "33 22 8:80 / /sas rw - xfs /dev/sdf rw\n"
      "34 22 8:96 / /usb rw - exfat /dev/sdg rw\n"
      "35 22 8:112 / /scsi rw - XFS /dev/sdh rw\n"
      "36 22 254:0 / /vm rw - ext4 /dev/vda rw\n"
      "37 22 179:0 / /sd rw - ext4 /dev/mmcblk0 rw\n"
      "38 22 252:0 / /zram rw - ext4 /dev/zram0 rw\n"
      "39 22 0:45 / /nonexistent-shm rw - tmpfs tmpfs rw\n"
      "40 22 7:3 / /loop rw - ext4 /dev/loop3 rw\n"
      "41 22 0:50 / /remote rw - fuse.sshfs host:/x rw\n"
      "42 22 8:99 / /gone rw - ext4 /dev/sdz rw\n");
  const std::map<std::string, std::string> expected = {
      {"/data/db", "ssd_nvme_ext4"},  // on / (a partition of the NVMe disk)
      {"/hdd/x", "hdd_sata_xfs"},
      {"/md", "hdd_sata_ext4"},
      {"/mixed/y", "mixed_mixed_ext4"},
      {"/sas", "hdd_sas_xfs"},
      {"/usb", "ssd_usb_exfat"},
      {"/scsi", "ssd_scsi_xfs"},
      {"/vm", "hdd_virtio_ext4"},
      {"/sd", "ssd_mmc_ext4"},
      {"/zram", "ram_none_ext4"},
      {"/nonexistent-shm/a", "ram_none_tmpfs"},
      {"/loop", "ram_loop_ext4"},  // a loop file on tmpfs
      {"/remote", "unknown_unknown_fuse_sshfs"},
      {"/gone", "unknown_unknown_ext4"},  // no such device in sysfs
  };
  for (const auto& [directory, device_class] : expected) {
    EXPECT_EQ(DeviceClassOf(directory, sys.roots()), device_class) << directory;
    EXPECT_THAT(DeviceClassOf(directory, sys.roots()), ::testing::MatchesRegex("[a-z0-9_]+")) << directory;
  }
}

TEST(DiskDeviceClassTest, NoMountAndOddTypesStayBoundedLabels) {
  FakeSysfs sys;
  EXPECT_EQ(DeviceClassOf("/anything", sys.roots()), "unknown_unknown_unknown");  // no mountinfo
  sys.MountInfo("22 1 0:50 / / rw - " + std::string(200, 'Z') + "é.x src rw\n");
  const std::string device_class = DeviceClassOf("/a", sys.roots());
  EXPECT_THAT(device_class, ::testing::MatchesRegex("unknown_unknown_z+"));
  EXPECT_LE(device_class.size(), kMaxDeviceClassLength);
}

TEST(DiskMembersTest, ReadsTheKernelsStatFields) {
  FakeSysfs sys;
  MdArray(sys);
  sys.Stat("sda1", "  1200  5 96000 3400   800 2 64000 2100 0 900 5500 0 0 0 0 0 0");
  const auto counters = ReadDeviceCounters("sda1", sys.roots());
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->read_ops, 1200u);
  EXPECT_EQ(counters->read_sectors, 96000u);
  EXPECT_EQ(counters->read_ms, 3400u);
  EXPECT_EQ(counters->write_ops, 800u);
  EXPECT_EQ(counters->write_sectors, 64000u);
  EXPECT_EQ(counters->write_ms, 2100u);
  EXPECT_FALSE(ReadDeviceCounters("sdz", sys.roots()).has_value());
}

TEST(DiskMembersTest, SlowMemberStandsOutAgainstItsSiblingsMedian) {
  // Four members; sdc1 took ten times as long per read, the same per write.
  const std::map<std::string, DeviceCounters> before = {{"sda1", {100, 0, 100, 50, 0, 50}},
                                                        {"sdb1", {100, 0, 100, 50, 0, 50}},
                                                        {"sdc1", {100, 0, 100, 50, 0, 50}},
                                                        {"sdd1", {100, 0, 100, 50, 0, 50}}};
  const std::map<std::string, DeviceCounters> after = {{"sda1", {300, 40960, 300, 150, 20480, 250}},
                                                       {"sdb1", {300, 40960, 320, 150, 20480, 250}},
                                                       {"sdc1", {300, 40960, 2100, 150, 20480, 250}},
                                                       {"sdd1", {300, 40960, 280, 150, 20480, 250}}};
  const auto activity = CompareMembers(before, after);
  ASSERT_EQ(activity.size(), 4u);
  const MemberActivity& slow = activity[2];
  EXPECT_EQ(slow.device, "sdc1");
  EXPECT_EQ(slow.read_ops, 200u);
  EXPECT_EQ(slow.read_bytes, 40960u * 512);
  EXPECT_DOUBLE_EQ(*slow.read_seconds_per_op, 0.01);
  EXPECT_DOUBLE_EQ(*slow.read_ratio, 10.0);  // 10 ms against the siblings' 1 ms median
  EXPECT_DOUBLE_EQ(*slow.write_ratio, 1.0);
  EXPECT_NEAR(*activity[0].read_ratio, 1.0, 0.1);
  EXPECT_THAT(SlowMemberFindings(activity, 2.0),
              ElementsAre("member sdc1 serves reads 10.0× slower than its 3 siblings"));
  EXPECT_TRUE(SlowMemberFindings(activity, 20.0).empty());
}

TEST(DiskMembersTest, FewOperationsOrNoSiblingsGiveNoFigure) {
  const std::map<std::string, DeviceCounters> before = {{"sda", {0, 0, 0, 0, 0, 0}}, {"sdb", {0, 0, 0, 0, 0, 0}}};
  // sdb read 3 times only: no time per read, and so sda has no sibling to
  // compare its reads with.
  const std::map<std::string, DeviceCounters> after = {{"sda", {100, 800, 50, 100, 800, 80}},
                                                       {"sdb", {3, 24, 90, 100, 800, 400}}};
  const auto activity = CompareMembers(before, after);
  ASSERT_EQ(activity.size(), 2u);
  EXPECT_FALSE(activity[1].read_seconds_per_op.has_value());
  EXPECT_FALSE(activity[0].read_ratio.has_value());
  // In a pair each is compared with the other alone.
  EXPECT_DOUBLE_EQ(*activity[1].write_ratio, 5.0);
  EXPECT_DOUBLE_EQ(*activity[0].write_ratio, 0.2);
  EXPECT_THAT(SlowMemberFindings(activity, 2.0),
              ElementsAre("member sdb serves writes 5.0× slower than its 1 siblings"));
  // A device that went away between the readings is left out.
  EXPECT_EQ(CompareMembers(before, {{"sda", {1, 1, 1, 1, 1, 1}}}).size(), 1u);
}

TEST(DiskMembersTest, NearZeroSiblingTimesAreFloored) {
  // Fast siblings whose counters did not tick (0 ms): the floor of 0.1 ms per
  // operation keeps the ratio finite.
  const std::map<std::string, DeviceCounters> before = {{"a", {}}, {"b", {}}, {"c", {}}};
  const std::map<std::string, DeviceCounters> after = {
      {"a", {100, 8, 0, 0, 0, 0}}, {"b", {100, 8, 0, 0, 0, 0}}, {"c", {100, 8, 30, 0, 0, 0}}};
  const auto activity = CompareMembers(before, after);
  EXPECT_DOUBLE_EQ(*activity[2].read_ratio, 3.0);  // 0.3 ms against the 0.1 ms floor
}

}  // namespace
}  // namespace hostperf::probes::disk
