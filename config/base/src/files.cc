#include "hostperf/base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace hostperf {
namespace {

constexpr const char* kReason = "bad_file";

std::string Bytes(std::uint64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= (1 << 10) && n % (1 << 10) == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::string> ReadBoundedFile(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes,
                                    FileAccess access) {
  using R = Result<std::string>;
  const std::string name = what.empty() ? path.string() : std::string(what) + ": \"" + path.string() + "\"";
  const auto fail = [&](const std::string& why) { return R::Error(kReason, name + ": " + why); };
  if (path.empty()) return fail("no file name");
  if (path.native().find('\0') != std::string::npos) return fail("the file name contains a NUL byte");
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat decides next.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return fail(std::string("cannot read: ") + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return fail("is a directory, not a file");
  if (!S_ISREG(st.st_mode)) return fail(std::string("is ") + KindOf(st.st_mode) + ", not a regular file");
  if (access == FileAccess::kOwnerOnly && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return fail(std::string("has mode ") + mode +
                ": a secret must not be accessible by group or others (chmod 600 it, as OpenSSH requires of "
                "private keys)");
  }
  const auto too_large = [&] { return fail("larger than the cap of " + Bytes(max_bytes)); };
  if (st.st_size < 0 || static_cast<std::uint64_t>(st.st_size) > max_bytes) return too_large();
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      if (text.size() + static_cast<std::size_t>(n) > max_bytes) return too_large();  // it grew
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      return fail(std::string("read error: ") + std::strerror(errno));
    }
  }
  return text;
}

std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(text).str();
}

std::size_t JsonNestingDepth(std::string_view text, std::size_t stop_above) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > deepest) {
          deepest = depth;
          if (deepest > stop_above) return stop_above + 1;
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return deepest;
}

std::string JsonDepthError(std::string_view text, std::size_t max_depth) {
  if (JsonNestingDepth(text, max_depth) <= max_depth) return "";
  return "nested deeper than " + std::to_string(max_depth) + " levels of arrays and objects";
}

}  // namespace hostperf
