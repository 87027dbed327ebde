#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "hostperf/base/result.h"

namespace hostperf {

// Caps on what the daemon and the CLI read from files named by the operator
// (--config.file, api.token_file, probes.net.secret_file, peers_file,
// --web.config.file, host lists) and from the state directory.
inline constexpr std::size_t kMaxConfigFileBytes = 4 << 20;   // TOML, web config, peers file, host lists
inline constexpr std::size_t kMaxSecretFileBytes = 64 << 10;  // token_file, secret_file
inline constexpr std::size_t kMaxStateFileBytes = 64 << 20;   // runs.json, cpu_baselines.json

// Who may have access to the file besides its owner.
enum class FileAccess {
  kAny,
  // A secret (api.token_file, probes.net.secret_file): refused when the group
  // or others have any access (mode & 077), as OpenSSH refuses private keys.
  kOwnerOnly,
};

// Reads the whole of `path`, which must be a regular file of at most
// `max_bytes`. Never blocks on a FIFO, a device or a socket: the file is
// opened with O_NONBLOCK and refused unless fstat says it is regular (a
// directory is named as such). `what` names the file in errors, e.g.
// "api.token_file"; every error reads `<what>: "<path>": <why>` (`<path>:
// <why>` when `what` is empty), reason "bad_file".
Result<std::string> ReadBoundedFile(const std::filesystem::path& path, std::string_view what, std::size_t max_bytes,
                                    FileAccess access = FileAccess::kAny);

// The whole of a file the kernel or the host provides (/proc, /sys, and
// their fixture trees in tests); nullopt when it cannot be opened or a read
// fails. No cap and no file type check, unlike ReadBoundedFile: for
// pseudo-files, whose size stat does not give, never for files an operator
// names.
std::optional<std::string> ReadFile(const std::filesystem::path& path);

// The deepest nesting of arrays and objects in JSON `text` (brackets inside
// strings do not count), scanning no further than the first point where it
// exceeds `stop_above` (then returns stop_above + 1). Used before parsing
// untrusted JSON: building, copying or printing a deeply nested value
// recurses, and a worker thread's stack is small.
std::size_t JsonNestingDepth(std::string_view text, std::size_t stop_above);

// The nesting every JSON the daemon parses is held to: request bodies and
// peers files kMaxJsonDepth; what embeds an accepted request a few levels
// down (the run history, a peer daemon's run record) kMaxStoredJsonDepth.
inline constexpr std::size_t kMaxJsonDepth = 64;
inline constexpr std::size_t kMaxStoredJsonDepth = 128;

// "" when `text` nests at most `max_depth` levels, else the error.
std::string JsonDepthError(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

}  // namespace hostperf
