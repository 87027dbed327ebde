#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace hostperf::probes {

// Files in the state directory (baselines, run history).

// The whole file, or nullopt when it cannot be read.
std::optional<std::string> ReadWholeFile(const std::filesystem::path& path);

// Writes `text` to `path` atomically: a reader sees the old or the new file,
// never a torn one, even across a crash (tmp + fsync + rename + dir fsync).
std::error_code WriteFileAtomically(const std::filesystem::path& path, const std::string& text);

}  // namespace hostperf::probes
