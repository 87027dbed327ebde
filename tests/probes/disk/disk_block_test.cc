#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hostperf/probes/disk/block.h"

namespace hostperf::probes::disk {
namespace {

std::vector<std::byte> Pattern(std::size_t size, std::uint64_t seed) {
  std::vector<std::byte> pattern(size);
  FillRandom(pattern, seed);
  return pattern;
}

TEST(Crc32cTest, MatchesKnownCastagnoliValues) {
  // RFC 3720 B.4: 32 bytes of zeros -> 0x8a9136aa; "123456789" -> 0xe3069283.
  std::vector<std::byte> zeros(32, std::byte{0});
  EXPECT_EQ(Crc32c(zeros, 0xffffffff) ^ 0xffffffff, 0x8a9136aau);
  const char* digits = "123456789";
  EXPECT_EQ(Crc32c({reinterpret_cast<const std::byte*>(digits), 9}, 0xffffffff) ^ 0xffffffff, 0xe3069283u);
}

TEST(BlockTest, RoundTripWithAndWithoutCrc) {
  for (const bool crc : {true, false}) {
    const auto pattern = Pattern(4096, 7);
    std::vector<std::byte> block(4096);
    const BlockId id{0xabc, 17, 3};
    FormatBlock(block, pattern, id, crc);
    EXPECT_TRUE(HasBlockMagic(block));
    EXPECT_EQ(VerifyBlock(block, id, crc), BlockStatus::kOk) << crc;
  }
}

TEST(BlockTest, DataIsRandomAndDiffersPerBlock) {
  const auto pattern = Pattern(8192, 1);
  std::vector<std::byte> a(8192), b(8192);
  FormatBlock(a, pattern, {1, 0, 1}, true);
  FormatBlock(b, pattern, {1, 1, 1}, true);
  std::size_t zeros = 0;
  for (const auto byte : a) zeros += byte == std::byte{0};
  EXPECT_LT(zeros, a.size() / 64);  // random, not zeros
  // Every 512-byte sector after the header differs between the two blocks.
  for (std::size_t sector = 1; sector < a.size() / 512; ++sector) {
    EXPECT_NE(std::memcmp(a.data() + sector * 512, b.data() + sector * 512, 512), 0) << sector;
  }
}

// The Write lanes restamp their buffers instead of copying the pattern per
// block: what reaches the disk must be byte for byte the full formatting,
// whatever the buffer held before (the plain pattern, another block, another
// generation, with or without CRC), at sizes whose tail is shorter than a
// stamp stride.
TEST(BlockTest, RestampIsByteForByteAFullFormat) {
  for (const std::size_t size : {std::size_t{4096}, std::size_t{65536 + 100}, std::size_t{1 << 20}}) {
    const auto pattern = Pattern(size, 11);
    std::vector<std::byte> restamped = pattern;  // as a Write lane's buffers start
    for (const bool crc : {false, true, true, false}) {
      for (const BlockId id : {BlockId{3, 1, 1}, BlockId{3, 1, 2}, BlockId{4, 77, 9}}) {
        RestampBlock(restamped, id, crc);
        std::vector<std::byte> formatted(size);
        FormatBlock(formatted, pattern, id, crc);
        ASSERT_EQ(restamped, formatted) << size << " crc " << crc << " block " << id.block;
        EXPECT_EQ(VerifyBlock(restamped, id, crc), BlockStatus::kOk);
      }
    }
  }
}

TEST(BlockTest, FlippedByteAnywhereIsACrcMismatch) {
  const auto pattern = Pattern(4096, 2);
  std::vector<std::byte> block(4096);
  const BlockId id{5, 9, 1};
  FormatBlock(block, pattern, id, true);
  for (const std::size_t offset : {std::size_t{3}, std::size_t{40}, std::size_t{100}, std::size_t{4095}}) {
    auto copy = block;
    copy[offset] ^= std::byte{0x10};
    const auto status = VerifyBlock(copy, id, true);
    EXPECT_TRUE(status == BlockStatus::kCrcMismatch || status == BlockStatus::kBadMagic) << offset;
  }
  // Without CRC a payload flip goes unseen; the header is still checked.
  auto copy = block;
  FormatBlock(copy, pattern, id, false);
  copy[1000] ^= std::byte{1};
  EXPECT_EQ(VerifyBlock(copy, id, false), BlockStatus::kOk);
}

TEST(BlockTest, MisplacedStaleAndForeignBlocksAreDetected) {
  const auto pattern = Pattern(4096, 3);
  std::vector<std::byte> block(4096);
  FormatBlock(block, pattern, {5, 9, 2}, true);
  EXPECT_EQ(VerifyBlock(block, {5, 10, 2}, true), BlockStatus::kWrongBlock);
  EXPECT_EQ(VerifyBlock(block, {6, 9, 2}, true), BlockStatus::kWrongFile);
  EXPECT_EQ(VerifyBlock(block, {5, 9, 3}, true), BlockStatus::kStaleGeneration);
  std::vector<std::byte> zeros(4096, std::byte{0});
  EXPECT_EQ(VerifyBlock(zeros, {5, 9, 2}, true), BlockStatus::kBadMagic);
  EXPECT_EQ(ToString(BlockStatus::kWrongBlock), "wrong_block");
}

}  // namespace
}  // namespace hostperf::probes::disk
