#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace hostperf::probes::disk {

// Every block the disk probe writes starts with this header. The CRC32C
// (Castagnoli, ISA-L) covers the whole block with the crc field zeroed, so a
// flipped byte anywhere is detected; file id, block number and generation
// detect a block from another file, another offset or an older pass.
inline constexpr std::uint64_t kBlockMagic = 0x31304b5344504824ULL;  // "$HPDSK01" little-endian
inline constexpr std::size_t kBlockHeaderSize = 64;

struct BlockId {
  std::uint64_t file_id = 0;
  std::uint64_t block = 0;
  std::uint64_t generation = 0;
};

enum class BlockStatus { kOk, kBadMagic, kCrcMismatch, kWrongFile, kWrongBlock, kStaleGeneration };
std::string_view ToString(BlockStatus status);

// CRC32C of `data` continuing from `crc` (ISA-L's crc32_iscsi).
std::uint32_t Crc32c(std::span<const std::byte> data, std::uint32_t crc = 0);

// Fills `pattern` (any size) with random bytes from `seed`: the per-thread
// source that every block's payload is stamped from.
void FillRandom(std::span<std::byte> pattern, std::uint64_t seed);

// Writes a block: the pattern, a per-block 64-bit word stamped every 512
// bytes (so that no two blocks, or sectors, are alike), the header, and the
// CRC unless `with_crc` is false (then the crc field is 0).
// block.size() must be >= kBlockHeaderSize and pattern.size() >= block.size().
void FormatBlock(std::span<std::byte> block, std::span<const std::byte> pattern, const BlockId& id, bool with_crc);

// FormatBlock for a buffer that already holds the pattern outside the stamps
// and header (a plain copy of it, or an earlier FormatBlock of the same
// pattern and size, untouched since): the stamps and the header are the only
// bytes that differ between blocks, so only they are rewritten (1/64 of a
// block) instead of copying the whole pattern again, then the CRC if `with_crc`.
// The result is byte for byte what FormatBlock(block, pattern, id, with_crc)
// would write.
void RestampBlock(std::span<std::byte> block, const BlockId& id, bool with_crc);

// Checks a block read back. Header fields are always checked; the CRC only
// when `check_crc`.
BlockStatus VerifyBlock(std::span<const std::byte> block, const BlockId& expected, bool check_crc);

// True when `data` starts with the block magic (recognises the probe's files).
bool HasBlockMagic(std::span<const std::byte> data);

}  // namespace hostperf::probes::disk
