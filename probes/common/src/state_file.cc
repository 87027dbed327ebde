#include "hostperf/probes/state_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>

#include "hostperf/base/files.h"

namespace hostperf::probes {
namespace {

std::error_code LastError() { return {errno, std::generic_category()}; }

// Twelve random characters for a temporary name that no one can guess ahead.
std::string RandomSuffix() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[12] = {};
  std::size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      break;  // no entropy source: the rest stays predictable, O_EXCL still holds
    }
  }
  std::string suffix;
  for (const unsigned char b : bytes) suffix += kAlphabet[b % (sizeof(kAlphabet) - 1)];
  return suffix;
}

}  // namespace

std::optional<std::string> ReadStateFile(const std::filesystem::path& path) {
  auto text = ReadBoundedFile(path, "state file", kMaxStateFileBytes);
  if (!text) return std::nullopt;
  return std::move(text).value();
}

std::error_code WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  return WriteFileAtomically(path, text, RandomSuffix);
}

std::error_code WriteFileAtomically(const std::filesystem::path& path, const std::string& text,
                                    const std::function<std::string()>& suffix) {
  // The temporary is created exclusively (O_EXCL: never an existing file,
  // never through a symlink) under a random name in the same directory, so
  // that a link planted at a predictable name cannot redirect the write.
  std::filesystem::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = std::filesystem::path(path).concat(".tmp." + suffix());
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return LastError();
  }
  if (fd < 0) return LastError();
  std::error_code error;
  for (std::size_t done = 0; done < text.size() && !error;) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) error = LastError();
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  if (!error && ::fsync(fd) != 0) error = LastError();
  if (::close(fd) != 0 && !error) error = LastError();
  if (!error && ::rename(tmp.c_str(), path.c_str()) != 0) error = LastError();
  if (error) {
    ::unlink(tmp.c_str());
    return error;
  }
  // Make the rename itself durable; failure here loses nothing already written.
  if (const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return {};
}

void RemoveStaleTemporaries(const std::filesystem::path& path, std::chrono::seconds min_age) {
  const std::string prefix = path.filename().string() + ".tmp";
  const std::time_t now = std::time(nullptr);
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(path.parent_path(), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name != prefix && name.rfind(prefix + ".", 0) != 0) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // lstat: a link's own age
    if (now - st.st_mtime < min_age.count()) continue;    // perhaps another process's write in progress
    ::unlink(it->path().c_str());                         // unlink: never follows
  }
}

}  // namespace hostperf::probes
