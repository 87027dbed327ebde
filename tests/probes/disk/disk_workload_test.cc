#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "hostperf/probes/disk/block.h"
#include "hostperf/probes/disk/scratch.h"
#include "hostperf/probes/disk/workload.h"
#include "temp_dir.h"

namespace hostperf::probes::disk {
namespace {

namespace fs = std::filesystem;
using test_support::TempDir;

std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

struct Fixture {
  TempDir temp;
  std::unique_ptr<TestDirectory> dir;
  std::unique_ptr<Workload> workload;
  std::atomic<bool> stop{false};
  OpLatencies latencies;

  // Two threads, one file each of 4 blocks of 4 KiB (direct I/O).
  std::optional<Failure> Create(bool direct_io = true, std::size_t block_size = 4096) {
    auto opened = TestDirectory::Open(temp.path(), {});
    if (!opened.ok()) return opened.failure();
    dir = std::move(*opened);
    WorkloadOptions options;
    options.threads = 2;
    options.block_size = std::max<std::size_t>(block_size, dir->alignment());
    options.file_size = 4 * options.block_size;
    options.direct_io = direct_io;
    options.run_id = 42;
    auto created = Workload::Create(*dir, options);
    if (!created.ok()) return created.failure();
    workload = std::move(*created);
    return std::nullopt;
  }

  std::optional<Failure> Run(DiskTest test, TestCounters& counters) {
    auto ran = workload->Run(test, std::chrono::steady_clock::now(), stop, counters, latencies, {});
    if (!ran.ok()) return ran.failure();
    return std::nullopt;
  }
};

#define CREATE_OR_SKIP(f)                                                                  \
  do {                                                                                     \
    const auto error = (f).Create();                                                       \
    if (error && error->reason == "direct_io_unsupported") GTEST_SKIP() << error->message; \
    ASSERT_FALSE(error) << error->reason << ": " << error->message;                        \
  } while (0)

TEST(DiskWorkloadTest, FourTestsVerifyEveryBlockAndCountBytes) {
  Fixture f;
  CREATE_OR_SKIP(f);
  const std::uint64_t total = f.workload->TotalBytes();
  for (const DiskTest test : kAllTests) {
    TestCounters counters;
    ASSERT_FALSE(f.Run(test, counters)) << TestName(test);
    EXPECT_EQ(counters.verify_errors.load(), 0u) << TestName(test) << f.workload->FirstVerifyError();
    switch (test) {
      case DiskTest::kWrite:
        EXPECT_EQ(counters.bytes_written.load(), total);
        break;
      case DiskTest::kReWrite:
        EXPECT_EQ(counters.bytes_read.load(), total);
        EXPECT_EQ(counters.bytes_written.load(), total);
        break;
      case DiskTest::kRead:
        EXPECT_EQ(counters.bytes_read.load(), total);
        break;
      case DiskTest::kSkipRead:
        EXPECT_EQ(counters.bytes_read.load(), total / 2);  // one pass: every other block
        EXPECT_EQ(counters.ops.load(), 4u);
        break;
    }
  }
  EXPECT_EQ(f.latencies[static_cast<int>(DiskOp::kWrite)].Total(), 8u);
  EXPECT_EQ(f.latencies[static_cast<int>(DiskOp::kRewriteRead)].Total(), 8u);
  EXPECT_EQ(f.latencies[static_cast<int>(DiskOp::kSkipRead)].Total(), 4u);
  // Files are the probe's own, with the prefix; gone with the workload.
  for (const auto& name : Entries(f.temp.path())) EXPECT_EQ(name.rfind("hostperf-disk-", 0), 0u) << name;
  EXPECT_EQ(Entries(f.temp.path()).size(), 2u);
  f.workload.reset();
  EXPECT_TRUE(Entries(f.temp.path()).empty());
}

// Corrupts the file behind the probe's back through a second descriptor.
void Patch(const fs::path& file, std::uint64_t offset, const std::vector<std::byte>& bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)), static_cast<ssize_t>(bytes.size()));
  ::fsync(fd);
  ::close(fd);
}

std::vector<std::byte> ReadAt(const fs::path& file, std::uint64_t offset, std::size_t size) {
  std::vector<std::byte> bytes(size);
  const int fd = ::open(file.c_str(), O_RDONLY);
  EXPECT_EQ(::pread(fd, bytes.data(), size, static_cast<off_t>(offset)), static_cast<ssize_t>(size));
  ::close(fd);
  return bytes;
}

TEST(DiskWorkloadTest, FlippedByteIsDetectedAndCounted) {
  Fixture f;
  CREATE_OR_SKIP(f);
  TestCounters write;
  ASSERT_FALSE(f.Run(DiskTest::kWrite, write));
  const fs::path file = f.temp.path() / f.workload->FileNames()[1];
  const std::size_t block = f.workload->options().block_size;
  auto byte = ReadAt(file, 2 * block + 777, 1);
  byte[0] ^= std::byte{0x01};
  Patch(file, 2 * block + 777, byte);
  TestCounters read;
  ASSERT_FALSE(f.Run(DiskTest::kRead, read));
  EXPECT_EQ(read.verify_errors.load(), 1u);
  EXPECT_NE(f.workload->FirstVerifyError().find("crc_mismatch in block 2"), std::string::npos)
      << f.workload->FirstVerifyError();
}

TEST(DiskWorkloadTest, BlockAtTheWrongOffsetIsDetected) {
  Fixture f;
  CREATE_OR_SKIP(f);
  TestCounters write;
  ASSERT_FALSE(f.Run(DiskTest::kWrite, write));
  const fs::path file = f.temp.path() / f.workload->FileNames()[0];
  const std::size_t block = f.workload->options().block_size;
  Patch(file, 3 * block, ReadAt(file, 1 * block, block));  // a valid block, misplaced
  TestCounters read;
  ASSERT_FALSE(f.Run(DiskTest::kRead, read));
  EXPECT_EQ(read.verify_errors.load(), 1u);
  EXPECT_NE(f.workload->FirstVerifyError().find("wrong_block in block 3"), std::string::npos)
      << f.workload->FirstVerifyError();
}

// Write lanes copy the pattern into their buffers once and then rewrite only
// each block's stamps and header: on disk every block must still be the full
// formatting of that one random pattern, with the formatting on the I/O
// thread (4 KiB) and on the lane's helper (256 KiB, CRC on).
TEST(DiskWorkloadTest, WrittenBlocksAreThePatternRestampedWholly) {
  for (const std::size_t block_size : {std::size_t{4096}, std::size_t{256 * 1024}}) {
    Fixture f;
    const auto error = f.Create(true, block_size);
    if (error && error->reason == "direct_io_unsupported") GTEST_SKIP() << error->message;
    ASSERT_FALSE(error) << error->reason << ": " << error->message;
    ASSERT_TRUE(f.workload->options().crc);
    TestCounters write;
    ASSERT_FALSE(f.Run(DiskTest::kWrite, write));
    const std::size_t block = f.workload->options().block_size;
    for (const auto& name : f.workload->FileNames()) {
      const fs::path file = f.temp.path() / name;
      const auto first = ReadAt(file, 0, block);
      std::size_t zeros = 0;
      for (const auto byte : first) zeros += byte == std::byte{0};
      // Random bytes are zero 1 time in 256; the header and stamps add small
      // integers' zero bytes. An unfilled buffer would be zero throughout.
      EXPECT_LT(zeros, block / 8) << name << ": random data, not an unfilled buffer";
      std::uint64_t file_id = 0;
      std::memcpy(&file_id, first.data() + 8, sizeof(file_id));  // the header's second field
      for (std::uint64_t index = 0; index < 4; ++index) {
        auto expected = first;  // the pattern outside stamps and header
        RestampBlock(expected, {file_id, index, 1}, true);
        EXPECT_EQ(ReadAt(file, index * block, block), expected) << name << " block " << index << " of " << block;
      }
    }
  }
}

TEST(DiskWorkloadTest, StopEndsEveryThreadEarly) {
  Fixture f;
  CREATE_OR_SKIP(f);
  f.stop = true;
  TestCounters counters;
  ASSERT_FALSE(f.Run(DiskTest::kWrite, counters));
  EXPECT_EQ(counters.bytes_written.load(), 0u);
}

TEST(DiskWorkloadTest, PreserveKeepsRenamedFiles) {
  Fixture f;
  CREATE_OR_SKIP(f);
  const auto kept = f.workload->Preserve();
  ASSERT_EQ(kept.size(), 2u);
  f.workload.reset();
  for (const auto& name : kept) {
    EXPECT_EQ(name.rfind("hostperf-preserved-", 0), 0u);
    EXPECT_TRUE(fs::exists(f.temp.path() / name));
  }
  // The start-up cleanup leaves preserved files alone.
  EXPECT_EQ(f.dir->RemoveLeftovers(), 0);
  EXPECT_EQ(Entries(f.temp.path()).size(), 2u);
}

// A real ENOSPC (the workload itself has no free-space guard): a clear
// no_space error, and the files are still removed.
TEST(DiskWorkloadTest, FullFileSystemIsNoSpaceAndLeavesNoFiles) {
  TempDir temp;
  if (::mount("hostperf-test", temp.path().c_str(), "tmpfs", 0, "size=1m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs (" << std::strerror(errno) << "); needs root or CAP_SYS_ADMIN";
  }
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{temp.path().string()};
  {
    auto dir = TestDirectory::Open(temp.path(), {}).value();
    WorkloadOptions options;
    options.block_size = 64 * 1024;
    options.file_size = 4 * 1024 * 1024;
    options.direct_io = false;
    // The files are reserved at creation (fallocate), so a full file system
    // shows there already; where reserving is unsupported, in the Write test.
    auto created = Workload::Create(*dir, options);
    std::optional<Failure> error;
    if (!created.ok()) {
      error = created.failure();
    } else {
      std::atomic<bool> stop{false};
      TestCounters counters;
      OpLatencies latencies;
      auto ran = (*created)->Run(DiskTest::kWrite, std::chrono::steady_clock::now(), stop, counters, latencies, {});
      if (!ran.ok()) error = ran.failure();
    }
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->reason, "no_space");
    EXPECT_TRUE(error->message.find("No space left on device") != std::string::npos ||
                error->message.find("disk full") != std::string::npos)
        << error->message;
  }
  EXPECT_TRUE(Entries(temp.path()).empty());
}

TEST(DiskScratchTest, DirectoryValidation) {
  TempDir temp;
  const auto missing = TestDirectory::Open(temp.path() / "nope", {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.reason(), "bad_directory");
  EXPECT_NE(missing.error().find("does not exist"), std::string::npos);

  std::ofstream(temp.path() / "file") << "x";
  const auto file = TestDirectory::Open(temp.path() / "file", {});
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.reason(), "bad_directory");
  EXPECT_NE(file.error().find("is not a directory"), std::string::npos);

  EXPECT_EQ(TestDirectory::Open("", {}).reason(), "bad_directory");

  if (::geteuid() != 0) {  // root writes anywhere
    fs::create_directory(temp.path() / "ro");
    fs::permissions(temp.path() / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_EQ(TestDirectory::Open(temp.path() / "ro", {}).reason(), "permission_denied");
  }

  const auto ok = TestDirectory::Open(temp.path(), {});
  ASSERT_TRUE(ok.ok());
  const auto& dir = **ok;
  EXPECT_GE(dir.alignment(), 512u);
  EXPECT_EQ(dir.alignment() & (dir.alignment() - 1), 0u);  // a power of two
  EXPECT_GT(dir.FreeBytes(), 0u);
}

TEST(DiskScratchTest, NeverOverwritesOrFollowsExistingNames) {
  TempDir temp;
  const auto dir = TestDirectory::Open(temp.path(), {}).value();
  const std::string name = ScratchName(1, 0);
  std::ofstream(temp.path() / name) << "someone else's data";
  const auto clash = ScratchFile::Create(*dir, name, false);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().find("File exists"), std::string::npos) << clash.error();
  fs::create_symlink(temp.path() / "target", temp.path() / ScratchName(1, 1));
  EXPECT_FALSE(ScratchFile::Create(*dir, ScratchName(1, 1), false).ok());
  EXPECT_FALSE(fs::exists(temp.path() / "target"));
  std::ifstream in(temp.path() / name);
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "someone else's data");
}

TEST(DiskScratchTest, RemovesOnlyCrashLeftovers) {
  TempDir temp;
  const auto dir = TestDirectory::Open(temp.path(), {}).value();
  // A pid that cannot be running (above pid_max).
  const std::string dead = "hostperf-disk-99999999-7-0.dat";
  std::vector<std::byte> block(4096);
  std::vector<std::byte> pattern(4096);
  FillRandom(pattern, 1);
  FormatBlock(block, pattern, {1, 0, 1}, true);
  std::ofstream(temp.path() / dead, std::ios::binary).write(reinterpret_cast<const char*>(block.data()), 4096);
  std::ofstream(temp.path() / "hostperf-disk-99999999-7-1.dat");  // empty: crashed right after create
  {
    // Reserved by fallocate, killed before its first block: zeros.
    const int fd = ::open((temp.path() / "hostperf-disk-99999999-7-4.dat").c_str(), O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 1 << 20), 0);
    ::close(fd);
  }
  // Not ours: wrong content, other names, a live process's file, a symlink.
  std::ofstream(temp.path() / "hostperf-disk-99999999-7-2.dat") << "user data, not a probe block";
  std::ofstream(temp.path() / "data.dat") << "x";
  std::ofstream(temp.path() / "hostperf-disk-notapid.dat") << "x";
  const std::string live = "hostperf-disk-1-7-0.dat";  // pid 1 is alive
  std::ofstream(temp.path() / live, std::ios::binary).write(reinterpret_cast<const char*>(block.data()), 4096);
  fs::create_symlink(temp.path() / "data.dat", temp.path() / "hostperf-disk-99999999-7-3.dat");

  EXPECT_EQ(dir->RemoveLeftovers(), 3);
  EXPECT_FALSE(fs::exists(temp.path() / dead));
  EXPECT_FALSE(fs::exists(temp.path() / "hostperf-disk-99999999-7-1.dat"));
  EXPECT_FALSE(fs::exists(temp.path() / "hostperf-disk-99999999-7-4.dat"));
  for (const char* kept : {"hostperf-disk-99999999-7-2.dat", "data.dat", "hostperf-disk-notapid.dat",
                           "hostperf-disk-1-7-0.dat", "hostperf-disk-99999999-7-3.dat"}) {
    EXPECT_TRUE(fs::exists(fs::symlink_status(temp.path() / kept))) << kept;
  }
}

TEST(DiskScratchTest, ErrnoReasons) {
  EXPECT_EQ(ReasonForErrno(ENOSPC), "no_space");
  EXPECT_EQ(ReasonForErrno(EDQUOT), "no_space");
  EXPECT_EQ(ReasonForErrno(EACCES), "permission_denied");
  EXPECT_EQ(ReasonForErrno(EIO), "io_error");
  EXPECT_NE(ErrnoError(ENOSPC, "write").message.find("No space left on device"), std::string::npos);
}

}  // namespace
}  // namespace hostperf::probes::disk
