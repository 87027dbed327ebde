#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "hostperf/base/result.h"

namespace hostperf::config {

using Duration = std::chrono::nanoseconds;

// Durations in vioperf's grammar: a non-negative number (decimals allowed)
// followed by a unit: s, sec, secs, second, seconds; m, min, mins, minute,
// minutes; h, hr, hrs, hour, hours; plus ms and us for sub-second values.
// A bare number means seconds. Case-insensitive, optional space before the unit.
Result<Duration> ParseDuration(std::string_view text);

// Sizes in vioperf's grammar: b, byte, bytes; k, kb, kilobyte(s); m, mb,
// megabyte(s); g, gb, gigabyte(s); t, tb, terabyte(s). Units are powers of
// 1024 (as vioperf's buffer sizes are). A bare number means bytes.
Result<std::uint64_t> ParseSize(std::string_view text);

// Shortest exact rendering that ParseDuration / ParseSize accept again
// ("5min", "1h", "250ms", "64mb", "1536kb").
std::string FormatDuration(Duration d);
std::string FormatSize(std::uint64_t bytes);

}  // namespace hostperf::config
