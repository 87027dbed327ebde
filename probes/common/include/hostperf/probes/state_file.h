#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <system_error>

namespace hostperf::probes {

// Files in the state directory (baselines, run history).

// The whole file, or nullopt when it cannot be read, is not a regular file
// or is larger than kMaxStateFileBytes.
std::optional<std::string> ReadStateFile(const std::filesystem::path& path);

// Writes `text` to `path` atomically: a reader sees the old or the new file,
// never a torn one, even across a crash (tmp + fsync + rename + dir fsync).
// The temporary, `<path>.tmp.<random>`, is created with O_EXCL|O_NOFOLLOW:
// a symlink or file planted at any name is never written through.
std::error_code WriteFileAtomically(const std::filesystem::path& path, const std::string& text);
// The same with the temporary's suffix from `suffix` (tests: a name taken by
// a planted file is skipped for the next one; 16 tries).
std::error_code WriteFileAtomically(const std::filesystem::path& path, const std::string& text,
                                    const std::function<std::string()>& suffix);

// Removes what an interrupted WriteFileAtomically(path, ...) left beside
// `path`: `<path>.tmp.<suffix>` and the old fixed `<path>.tmp` (links
// themselves, never their targets). For start-up, before any write to `path`.
// Only those last modified at least `min_age` ago: the CLI and the daemon
// share the state directory, and a temporary another live process is about
// to rename into place is seconds old at most.
void RemoveStaleTemporaries(const std::filesystem::path& path, std::chrono::seconds min_age = std::chrono::minutes(10));

}  // namespace hostperf::probes
