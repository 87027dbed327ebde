#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "hostperf/base/result.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::disk {

// Scratch files are named "hostperf-disk-<pid>-<run>-<n>.dat"; files kept
// with --preserve-files are renamed "hostperf-preserved-<...>.dat" so that
// the start-up cleanup leaves them alone.
inline constexpr std::string_view kScratchPrefix = "hostperf-disk-";
inline constexpr std::string_view kPreservedPrefix = "hostperf-preserved-";

// The disk probe's failure reasons: no_space, io_error, permission_denied,
// direct_io_unsupported, bad_directory, bad_options, out_of_memory, ...
// errno of a failed system call -> reason label.
std::string ReasonForErrno(int error);
Failure ErrnoError(int error, const std::string& what);

// An open directory under test: an O_DIRECTORY descriptor (files are
// created relative to it, so a path swapped behind our back does not
// redirect writes), its free space and the direct I/O alignment.
class TestDirectory {
 public:
  // Validates `path`: absolute or relative, must exist, be a directory and be
  // writable. `roots` locates /sys for the block device fallback.
  static Result<std::unique_ptr<TestDirectory>> Open(const std::filesystem::path& path, const SystemRoots& roots);
  ~TestDirectory();
  TestDirectory(const TestDirectory&) = delete;
  TestDirectory& operator=(const TestDirectory&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  std::uint64_t FreeBytes() const;
  // statx STATX_DIOALIGN offset alignment, else the block device's logical
  // block size, else 512.
  std::size_t alignment() const { return alignment_; }
  std::string_view alignment_source() const { return alignment_source_; }

  // Removes scratch files left by a process that no longer runs (a crash):
  // name prefix, a regular file of ours, and either empty or starting with
  // the block magic. Never touches anything else. Returns the count removed.
  int RemoveLeftovers() const;

 private:
  TestDirectory(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
  std::size_t alignment_ = 512;
  std::string alignment_source_ = "default";
};

// A file the probe created (O_CREAT | O_EXCL | O_NOFOLLOW) and removes on
// destruction unless Preserve() was called.
class ScratchFile {
 public:
  static Result<std::unique_ptr<ScratchFile>> Create(const TestDirectory& dir, const std::string& name, bool direct_io);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  // Keeps the file, renamed with kPreservedPrefix. Returns the new name.
  std::string Preserve();

 private:
  ScratchFile(int dir_fd, int fd, std::string name) : dir_fd_(dir_fd), fd_(fd), name_(std::move(name)) {}
  int dir_fd_;
  int fd_;
  std::string name_;
  bool keep_ = false;
};

// "hostperf-disk-<pid>-<run>-<index>.dat"
std::string ScratchName(std::uint64_t run_id, std::size_t index);
std::string ScratchName(long pid, std::uint64_t run_id, std::size_t index);

// The registry of directories in use: before a run
// writes its first scratch file into a directory, whichever directory (a
// configured one, or one given to a full run on the API or the CLI), it
// records it under <state_directory>/disk-runs/<run id>.run, with what
// identifies this process across pid reuse and reboots: the boot id
// (/proc/sys/kernel/random/boot_id), the pid and the process start time
// (/proc/self/stat field 22). The record goes once the run's files are gone
// (or preserved). At start-up, CleanRecordedLeftovers() removes the scratch
// files of every record whose process no longer runs: exactly that run's
// names ("hostperf-disk-<pid>-<run id>-<n>.dat"), regular files of ours that
// are empty or start with the block magic; then the record. A live process
// that took the pid after a reboot does not protect them (its boot id or
// start time differ); files renamed by preserve_files are never touched.
struct ProcessIdentity {
  std::string boot_id;
  long pid = 0;
  std::uint64_t start_time = 0;  // clock ticks since boot
  bool operator==(const ProcessIdentity&) const = default;
};
ProcessIdentity SelfIdentity();
// Whether the process a record names still runs (this process included).
bool IdentityAlive(const ProcessIdentity& identity);

class RunRecord {
 public:
  // Writes (and fsyncs) the record; a failure says why (the run goes on
  // without one, logged: a CLI without a writable state directory).
  static Result<std::unique_ptr<RunRecord>> Create(const std::filesystem::path& state_directory,
                                                   const std::string& directory, std::uint64_t run_id);
  ~RunRecord();  // removes the record
  RunRecord(const RunRecord&) = delete;
  RunRecord& operator=(const RunRecord&) = delete;

 private:
  explicit RunRecord(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

// Start-up: cleans the leftovers of every record of a process that no
// longer runs and removes those records. Returns the files removed.
int CleanRecordedLeftovers(const std::filesystem::path& state_directory);
// The registry directory under the state directory.
std::filesystem::path RunRecordDirectory(const std::filesystem::path& state_directory);
// For tests: a record as another process would have written it.
Result<void> WriteRunRecord(const std::filesystem::path& path, const ProcessIdentity& owner,
                            const std::string& directory, std::uint64_t run_id);

// Aligned heap buffer for O_DIRECT.
struct FreeDeleter {
  void operator()(std::byte* p) const;
};
using AlignedBuffer = std::unique_ptr<std::byte[], FreeDeleter>;
AlignedBuffer AllocateAligned(std::size_t alignment, std::size_t size);

}  // namespace hostperf::probes::disk
