// The bounded reader of operator files, the reader of kernel files and the
// JSON nesting pre-scan (config/base).
#include "hostperf/base/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace hostperf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class BoundedFileTest : public ::testing::Test {
 protected:
  BoundedFileTest() {
    std::string pattern = (fs::temp_directory_path() / "hostperf-files-test-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  }
  ~BoundedFileTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path Write(const std::string& name, const std::string& content, mode_t mode = 0600) {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << content;
    ::chmod(path.c_str(), mode);
    return path;
  }
  fs::path dir_;
};

TEST_F(BoundedFileTest, ReadsARegularFile) {
  const auto text = ReadBoundedFile(Write("a", "hello\n"), "x", 64);
  ASSERT_TRUE(text) << text.error();
  EXPECT_EQ(*text, "hello\n");
}

TEST_F(BoundedFileTest, RefusesWhatIsLargerThanTheCap) {
  const fs::path path = Write("big", std::string(65, 'x'));
  const auto text = ReadBoundedFile(path, "peers file", 64);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error(), "peers file: \"" + path.string() + "\": larger than the cap of 64 bytes");
  EXPECT_EQ(text.reason(), "bad_file");
  EXPECT_TRUE(ReadBoundedFile(path, "peers file", 65));
}

TEST_F(BoundedFileTest, ADirectorySaysSo) {
  const auto text = ReadBoundedFile(dir_, "api.token_file", 64);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error(), "api.token_file: \"" + dir_.string() + "\": is a directory, not a file");
}

TEST_F(BoundedFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto text = ReadBoundedFile(fifo, "api.token_file", 64);  // an old open() blocked here for ever
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error(), HasSubstr("is a FIFO (named pipe), not a regular file"));
}

TEST_F(BoundedFileTest, DevZeroIsRefusedWithoutReading) {
  const auto text = ReadBoundedFile("/dev/zero", "api.token_file", kMaxSecretFileBytes);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error(), "api.token_file: \"/dev/zero\": is a character device, not a regular file");
}

TEST_F(BoundedFileTest, MissingFileAndNulInTheName) {
  const auto missing = ReadBoundedFile(dir_ / "nope", "", 64);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), (dir_ / "nope").string() + ": cannot read: No such file or directory");
  const auto nul = ReadBoundedFile(fs::path(std::string("/etc/pass\0wd", 11)), "api.token_file", 64);
  ASSERT_FALSE(nul);
  EXPECT_THAT(nul.error(), HasSubstr("the file name contains a NUL byte"));
}

TEST_F(BoundedFileTest, SecretsMustBeOwnerOnly) {
  const fs::path loose = Write("secret", "0123456789abcdef0123", 0644);
  const auto refused = ReadBoundedFile(loose, "probes.net.secret_file", 64, FileAccess::kOwnerOnly);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "probes.net.secret_file: \"" + loose.string() +
                                 "\": has mode 0644: a secret must not be accessible by group or others (chmod 600 it, "
                                 "as OpenSSH requires of private keys)");
  ::chmod(loose.c_str(), 0640);
  EXPECT_THAT(ReadBoundedFile(loose, "s", 64, FileAccess::kOwnerOnly).error(), HasSubstr("has mode 0640"));
  ::chmod(loose.c_str(), 0604);
  EXPECT_FALSE(ReadBoundedFile(loose, "s", 64, FileAccess::kOwnerOnly));
  ::chmod(loose.c_str(), 0400);
  EXPECT_TRUE(ReadBoundedFile(loose, "s", 64, FileAccess::kOwnerOnly));
  ::chmod(loose.c_str(), 0600);
  EXPECT_TRUE(ReadBoundedFile(loose, "s", 64, FileAccess::kOwnerOnly));
  // Other files may be read by anyone.
  ::chmod(loose.c_str(), 0644);
  EXPECT_TRUE(ReadBoundedFile(loose, "s", 64));
}

using ReadFileTest = BoundedFileTest;

TEST_F(ReadFileTest, TheWholeFileBytesAsTheyAre) {
  const std::string content = std::string("a\0b\r\n", 5) + std::string(100000, 'x');
  EXPECT_EQ(ReadFile(Write("f", content)), content);
  EXPECT_EQ(ReadFile(Write("empty", "")), "");
}

TEST_F(ReadFileTest, NulloptWhenItCannotBeOpened) {
  EXPECT_FALSE(ReadFile(dir_ / "missing").has_value());
  const fs::path unreadable = Write("unreadable", "x", 0);
  if (::geteuid() != 0) {  // root reads it anyway
    EXPECT_FALSE(ReadFile(unreadable).has_value());
  }
}

TEST(ReadKernelFileTest, APseudoFileWhoseSizeStatDoesNotGive) {
  const auto stat = ReadFile("/proc/self/stat");
  ASSERT_TRUE(stat.has_value());
  EXPECT_THAT(*stat, HasSubstr(std::to_string(::getpid()) + " ("));
}

TEST(JsonNestingDepthTest, CountsArraysAndObjectsButNotBracketsInStrings) {
  EXPECT_EQ(JsonNestingDepth("1", 64), 0u);
  EXPECT_EQ(JsonNestingDepth("[]", 64), 1u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":[{"b":[1,2]}],"c":{}})", 64), 4u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[{{{{"})", 64), 1u);
  EXPECT_EQ(JsonNestingDepth(R"(["\"[[[", ["\\", [1]]])", 64), 3u);
  EXPECT_EQ(JsonNestingDepth("[[[[]]]][[]]", 64), 4u);
}

TEST(JsonNestingDepthTest, StopsOnceTooDeep) {
  const std::string deep = std::string(870, '[') + std::string(870, ']');
  EXPECT_EQ(JsonNestingDepth(deep, 64), 65u);
  EXPECT_EQ(JsonDepthError(deep), "nested deeper than 64 levels of arrays and objects");
  const std::string limit = std::string(64, '[') + std::string(64, ']');
  EXPECT_EQ(JsonDepthError(limit), "");
  EXPECT_EQ(JsonDepthError("[" + limit + "]"), "nested deeper than 64 levels of arrays and objects");
  EXPECT_EQ(JsonDepthError("[" + limit + "]", kMaxStoredJsonDepth), "");
}

}  // namespace
}  // namespace hostperf
