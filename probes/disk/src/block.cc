#include "hostperf/probes/disk/block.h"

#include <isa-l/crc.h>

#include <cstring>
#include <limits>

namespace hostperf::probes::disk {
namespace {

constexpr std::size_t kStampStride = 512;

struct Header {
  std::uint64_t magic;
  std::uint64_t file_id;
  std::uint64_t block;
  std::uint64_t generation;
  std::uint64_t block_size;
  std::uint32_t crc;
  std::uint32_t reserved;
  std::uint64_t padding[2];
};
static_assert(sizeof(Header) == kBlockHeaderSize);
constexpr std::size_t kCrcOffset = offsetof(Header, crc);

std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint32_t BlockCrc(std::span<const std::byte> block) {
  // Header with the crc field as zero, then the rest.
  Header header;
  std::memcpy(&header, block.data(), sizeof(header));
  header.crc = 0;
  std::uint32_t crc = Crc32c({reinterpret_cast<const std::byte*>(&header), sizeof(header)});
  return Crc32c(block.subspan(sizeof(Header)), crc);
}

}  // namespace

std::string_view ToString(BlockStatus status) {
  switch (status) {
    case BlockStatus::kOk:
      return "ok";
    case BlockStatus::kBadMagic:
      return "bad_magic";
    case BlockStatus::kCrcMismatch:
      return "crc_mismatch";
    case BlockStatus::kWrongFile:
      return "wrong_file";
    case BlockStatus::kWrongBlock:
      return "wrong_block";
    case BlockStatus::kStaleGeneration:
      return "stale_generation";
  }
  return "unknown";
}

std::uint32_t Crc32c(std::span<const std::byte> data, std::uint32_t crc) {
  // crc32_iscsi takes an int length: feed large spans in pieces.
  constexpr std::size_t kChunk = std::numeric_limits<int>::max() / 2;
  while (!data.empty()) {
    const std::size_t n = std::min(data.size(), kChunk);
    crc = crc32_iscsi(reinterpret_cast<unsigned char*>(const_cast<std::byte*>(data.data())), static_cast<int>(n), crc);
    data = data.subspan(n);
  }
  return crc;
}

void FillRandom(std::span<std::byte> pattern, std::uint64_t seed) {
  std::uint64_t state = seed;
  std::size_t i = 0;
  for (; i + 8 <= pattern.size(); i += 8) {
    const std::uint64_t word = SplitMix64(state);
    std::memcpy(pattern.data() + i, &word, 8);
  }
  const std::uint64_t tail = SplitMix64(state);
  std::memcpy(pattern.data() + i, &tail, pattern.size() - i);
}

void FormatBlock(std::span<std::byte> block, std::span<const std::byte> pattern, const BlockId& id, bool with_crc) {
  std::memcpy(block.data(), pattern.data(), block.size());
  RestampBlock(block, id, with_crc);
}

void RestampBlock(std::span<std::byte> block, const BlockId& id, bool with_crc) {
  std::uint64_t state = (id.file_id * 0x100000001b3ULL) ^ (id.block << 20) ^ id.generation;
  for (std::size_t offset = kBlockHeaderSize; offset + 8 <= block.size(); offset += kStampStride) {
    const std::uint64_t word = SplitMix64(state);
    std::memcpy(block.data() + offset, &word, 8);
  }
  Header header{};
  header.magic = kBlockMagic;
  header.file_id = id.file_id;
  header.block = id.block;
  header.generation = id.generation;
  header.block_size = block.size();
  std::memcpy(block.data(), &header, sizeof(header));
  if (with_crc) {
    const std::uint32_t crc = BlockCrc(block);
    std::memcpy(block.data() + kCrcOffset, &crc, sizeof(crc));
  }
}

BlockStatus VerifyBlock(std::span<const std::byte> block, const BlockId& expected, bool check_crc) {
  if (block.size() < kBlockHeaderSize || !HasBlockMagic(block)) return BlockStatus::kBadMagic;
  Header header;
  std::memcpy(&header, block.data(), sizeof(header));
  // The CRC first: a corrupted header is a corruption, not a misplacement.
  if (check_crc && BlockCrc(block) != header.crc) return BlockStatus::kCrcMismatch;
  if (header.block_size != block.size()) return BlockStatus::kWrongBlock;
  if (header.file_id != expected.file_id) return BlockStatus::kWrongFile;
  if (header.block != expected.block) return BlockStatus::kWrongBlock;
  if (header.generation != expected.generation) return BlockStatus::kStaleGeneration;
  return BlockStatus::kOk;
}

bool HasBlockMagic(std::span<const std::byte> data) {
  if (data.size() < sizeof(std::uint64_t)) return false;
  std::uint64_t magic;
  std::memcpy(&magic, data.data(), sizeof(magic));
  return magic == kBlockMagic;
}

}  // namespace hostperf::probes::disk
