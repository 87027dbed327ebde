#include "hostperf/probes/disk/scratch.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "hostperf/probes/disk/block.h"

namespace hostperf::probes::disk {
namespace {

// Debian 12's glibc declares struct statx without the direct I/O fields;
// read them at their kernel ABI offsets (include/uapi/linux/stat.h).
constexpr unsigned kStatxDioAlign = 0x2000;  // STATX_DIOALIGN, Linux 6.1
constexpr std::size_t kStatxDioMemAlignOffset = 152;
constexpr std::size_t kStatxDioOffsetAlignOffset = 156;

struct DioAlign {
  std::uint32_t memory = 0;
  std::uint32_t offset = 0;
};

std::optional<DioAlign> StatxDioAlign(int fd) {
  alignas(8) unsigned char buffer[256] = {};
  if (::syscall(SYS_statx, fd, "", AT_EMPTY_PATH, kStatxDioAlign, buffer) != 0) return std::nullopt;
  std::uint32_t mask;
  std::memcpy(&mask, buffer, sizeof(mask));
  if ((mask & kStatxDioAlign) == 0) return std::nullopt;
  DioAlign align;
  std::memcpy(&align.memory, buffer + kStatxDioMemAlignOffset, sizeof(align.memory));
  std::memcpy(&align.offset, buffer + kStatxDioOffsetAlignOffset, sizeof(align.offset));
  if (align.offset == 0) return std::nullopt;  // the file system does not support O_DIRECT here
  return align;
}

// Logical block size of the device holding `fd`, from sysfs (a partition's
// queue/ lives in its parent device's directory).
std::optional<std::size_t> DeviceLogicalBlockSize(int fd, const SystemRoots& roots) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::nullopt;
  const auto dev =
      roots.sys / "dev/block" / (std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)));
  for (const auto& candidate : {dev / "queue/logical_block_size", dev / "../queue/logical_block_size"}) {
    std::ifstream in(candidate);
    std::size_t size = 0;
    if (in >> size && size >= 512 && (size & (size - 1)) == 0) return size;
  }
  return std::nullopt;
}

bool ProcessAlive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// pid from "hostperf-disk-<pid>-...", 0 when the name does not parse.
pid_t PidFromName(std::string_view name) {
  if (name.substr(0, kScratchPrefix.size()) != kScratchPrefix) return 0;
  name.remove_prefix(kScratchPrefix.size());
  pid_t pid = 0;
  std::size_t i = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 10; ++i) pid = pid * 10 + (name[i] - '0');
  if (i == 0 || i >= name.size() || name[i] != '-') return 0;
  if (name.size() < 4 || name.substr(name.size() - 4) != ".dat") return 0;
  return pid;
}

// A leftover we may remove: a regular file of ours (not a link), empty (a
// crash before the first block), starting with zeros (a crash between the
// fallocate that reserves the file and its first block) or starting with our
// block magic.
bool IsOurScratchFile(int dir_fd, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return false;
  if (st.st_size == 0) return true;
  const int fd = ::openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  std::byte head[8];
  const bool ours = ::pread(fd, head, sizeof(head), 0) == static_cast<ssize_t>(sizeof(head)) &&
                    (HasBlockMagic(head) ||
                     std::all_of(std::begin(head), std::end(head), [](std::byte b) { return b == std::byte{0}; }));
  ::close(fd);
  return ours;
}

}  // namespace

std::string ReasonForErrno(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT:
      return "no_space";
    case EACCES:
    case EPERM:
    case EROFS:
      return "permission_denied";
    case EIO:
      return "io_error";
    default:
      return "io_error";
  }
}

Failure ErrnoError(int error, const std::string& what) {
  return {ReasonForErrno(error), what + ": " + std::strerror(error)};
}

Result<std::unique_ptr<TestDirectory>> TestDirectory::Open(const std::filesystem::path& path,
                                                           const SystemRoots& roots) {
  if (path.empty()) return Failure{"bad_directory", "empty directory name"};
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOTDIR) return Failure{"bad_directory", "\"" + path.string() + "\" is not a directory"};
    if (error == ENOENT) return Failure{"bad_directory", "directory \"" + path.string() + "\" does not exist"};
    return ErrnoError(error, "cannot open directory \"" + path.string() + "\"");
  }
  std::unique_ptr<TestDirectory> dir(new TestDirectory(fd, path.string()));
  if (::faccessat(fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    return Failure{"permission_denied", "directory \"" + path.string() + "\" is not writable"};
  }
  if (const auto dio = StatxDioAlign(fd)) {
    dir->alignment_ = std::max<std::size_t>({std::size_t{512}, dio->offset, dio->memory});
    dir->alignment_source_ = "statx";
  } else if (const auto device = DeviceLogicalBlockSize(fd, roots)) {
    dir->alignment_ = *device;
    dir->alignment_source_ = "device";
  }
  return dir;
}

TestDirectory::~TestDirectory() { ::close(fd_); }

std::uint64_t TestDirectory::FreeBytes() const {
  struct statvfs vfs {};
  if (::fstatvfs(fd_, &vfs) != 0) return 0;
  return static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

int TestDirectory::RemoveLeftovers() const {
  const int dup_fd = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dup_fd < 0) return 0;
  DIR* listing = ::fdopendir(dup_fd);
  if (listing == nullptr) {
    ::close(dup_fd);
    return 0;
  }
  int removed = 0;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    const pid_t pid = PidFromName(name);
    if (pid <= 0 || pid == ::getpid() || ProcessAlive(pid)) continue;
    if (IsOurScratchFile(fd_, name) && ::unlinkat(fd_, name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(listing);
  return removed;
}

Result<std::unique_ptr<ScratchFile>> ScratchFile::Create(const TestDirectory& dir, const std::string& name,
                                                         bool direct_io) {
  const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | (direct_io ? O_DIRECT : 0);
  const int fd = ::openat(dir.fd(), name.c_str(), flags, 0600);
  if (fd >= 0) return std::unique_ptr<ScratchFile>(new ScratchFile(dir.fd(), fd, name));
  const int error = errno;
  if (direct_io && error == EINVAL) {
    // Some file systems refuse O_DIRECT at open; never fall back silently.
    // The file may have been created before the refusal.
    ::unlinkat(dir.fd(), name.c_str(), 0);
    return Failure{"direct_io_unsupported", "the file system of \"" + dir.path() +
                                                "\" refuses direct I/O (O_DIRECT); use --disable-direct-io "
                                                "(disable_direct_io = true) to test through the page cache"};
  }
  return ErrnoError(error, "cannot create \"" + dir.path() + "/" + name + "\"");
}

ScratchFile::~ScratchFile() {
  ::close(fd_);
  if (!keep_) ::unlinkat(dir_fd_, name_.c_str(), 0);
}

std::string ScratchFile::Preserve() {
  const std::string kept = std::string(kPreservedPrefix) + name_.substr(kScratchPrefix.size());
  if (::renameat(dir_fd_, name_.c_str(), dir_fd_, kept.c_str()) != 0) return name_;
  keep_ = true;
  name_ = kept;
  return kept;
}

std::string ScratchName(std::uint64_t run_id, std::size_t index) { return ScratchName(::getpid(), run_id, index); }

std::string ScratchName(long pid, std::uint64_t run_id, std::size_t index) {
  return std::string(kScratchPrefix) + std::to_string(pid) + "-" + std::to_string(run_id) + "-" +
         std::to_string(index) + ".dat";
}

namespace {

std::string ReadSmallFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string content;
  char buffer[4096];
  while (in && content.size() < 64 * 1024) {
    in.read(buffer, sizeof(buffer));
    content.append(buffer, static_cast<std::size_t>(in.gcount()));
  }
  return content;
}

std::string BootId() {
  std::string id = ReadSmallFile("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// Field 22 (starttime) of /proc/<pid>/stat; 0 when unreadable.
std::uint64_t StartTime(long pid) {
  const std::string stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');  // the command may hold spaces and ')'
  if (close == std::string::npos) return 0;
  std::size_t at = close + 2;
  for (int field = 3; field < 22; ++field) {
    at = stat.find(' ', at);
    if (at == std::string::npos) return 0;
    ++at;
  }
  return std::strtoull(stat.c_str() + at, nullptr, 10);
}

// Removes "hostperf-disk-<pid>-<run_id>-<n>.dat" files of ours from `directory`.
int RemoveRunFiles(const std::string& directory, long pid, std::uint64_t run_id) {
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return 0;
  DIR* listing = ::fdopendir(dir_fd);
  if (listing == nullptr) {
    ::close(dir_fd);
    return 0;
  }
  const std::string prefix = std::string(kScratchPrefix) + std::to_string(pid) + "-" + std::to_string(run_id) + "-";
  int removed = 0;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0 || name.size() < prefix.size() + 5 || name.substr(name.size() - 4) != ".dat") {
      continue;
    }
    if (IsOurScratchFile(dir_fd, name) && ::unlinkat(dir_fd, name.c_str(), 0) == 0) ++removed;
  }
  ::closedir(listing);  // closes dir_fd
  return removed;
}

struct ParsedRecord {
  ProcessIdentity owner;
  std::uint64_t run_id = 0;
  std::string directory;
};

std::optional<ParsedRecord> ParseRecord(const std::string& content) {
  // "hostperf-disk-run 1\nboot_id <id>\npid <n>\nstart_time <n>\nrun_id <n>\ndirectory <path>\n"
  std::istringstream in(content);
  std::string magic, key;
  int version = 0;
  ParsedRecord record;
  if (!(in >> magic >> version) || magic != "hostperf-disk-run" || version != 1) return std::nullopt;
  if (!(in >> key >> record.owner.boot_id) || key != "boot_id") return std::nullopt;
  if (!(in >> key >> record.owner.pid) || key != "pid" || record.owner.pid <= 0) return std::nullopt;
  if (!(in >> key >> record.owner.start_time) || key != "start_time") return std::nullopt;
  if (!(in >> key >> record.run_id) || key != "run_id") return std::nullopt;
  if (!(in >> key) || key != "directory") return std::nullopt;
  in.get();  // the space
  std::getline(in, record.directory);
  // The last line ends with a newline: a record cut short by a crash (no
  // scratch file was created after it) does not parse.
  if (record.directory.empty() || in.eof()) return std::nullopt;
  return record;
}

}  // namespace

ProcessIdentity SelfIdentity() {
  static const ProcessIdentity self = [] {
    ProcessIdentity id;
    id.boot_id = BootId();
    id.pid = ::getpid();
    id.start_time = StartTime(id.pid);
    return id;
  }();
  return self;
}

bool IdentityAlive(const ProcessIdentity& identity) {
  if (identity.boot_id != BootId()) return false;  // rebooted since: nothing of it runs
  if (!ProcessAlive(static_cast<pid_t>(identity.pid))) return false;
  // The pid runs: the same process only if it started at the same tick.
  return StartTime(identity.pid) == identity.start_time;
}

std::filesystem::path RunRecordDirectory(const std::filesystem::path& state_directory) {
  return state_directory / "disk-runs";
}

Result<void> WriteRunRecord(const std::filesystem::path& path, const ProcessIdentity& owner,
                            const std::string& directory, std::uint64_t run_id) {
  if (directory.find('\n') != std::string::npos) return Failure{"bad_directory", "a directory name with a newline"};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::string content = "hostperf-disk-run 1\nboot_id " + owner.boot_id + "\npid " + std::to_string(owner.pid) +
                              "\nstart_time " + std::to_string(owner.start_time) + "\nrun_id " +
                              std::to_string(run_id) + "\ndirectory " + directory + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError(errno, "cannot create " + path.string());
  const bool written =
      ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()) && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!written) {
    ::unlink(path.c_str());
    return ErrnoError(error, "cannot write " + path.string());
  }
  if (const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return {};
}

Result<std::unique_ptr<RunRecord>> RunRecord::Create(const std::filesystem::path& state_directory,
                                                     const std::string& directory, std::uint64_t run_id) {
  if (state_directory.empty()) return Failure{"bad_directory", "no state directory"};
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(directory, ec).lexically_normal().string();
  const auto path =
      RunRecordDirectory(state_directory) / (std::to_string(::getpid()) + "-" + std::to_string(run_id) + ".run");
  if (auto written = WriteRunRecord(path, SelfIdentity(), ec ? directory : absolute, run_id); !written.ok()) {
    return written.failure();
  }
  return std::unique_ptr<RunRecord>(new RunRecord(path));
}

RunRecord::~RunRecord() { ::unlink(path_.c_str()); }

int CleanRecordedLeftovers(const std::filesystem::path& state_directory) {
  std::error_code ec;
  const auto registry = RunRecordDirectory(state_directory);
  std::filesystem::directory_iterator it(registry, ec);
  if (ec) return 0;
  int removed = 0;
  for (const auto& entry : it) {
    const auto& path = entry.path();
    if (path.extension() != ".run" || !entry.is_regular_file(ec)) continue;
    const auto record = ParseRecord(ReadSmallFile(path));
    if (record) {
      if (IdentityAlive(record->owner)) continue;  // a run in progress (the CLI, or this process)
      removed += RemoveRunFiles(record->directory, record->owner.pid, record->run_id);
    }
    // A record cut short by a crash while it was written came before any
    // scratch file: nothing to clean.
    std::filesystem::remove(path, ec);
  }
  return removed;
}

void FreeDeleter::operator()(std::byte* p) const { std::free(p); }

AlignedBuffer AllocateAligned(std::size_t alignment, std::size_t size) {
  alignment = std::max<std::size_t>(alignment, 4096);
  const std::size_t rounded = (size + alignment - 1) / alignment * alignment;
  return AlignedBuffer(static_cast<std::byte*>(std::aligned_alloc(alignment, rounded)));
}

}  // namespace hostperf::probes::disk
