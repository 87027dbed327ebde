#pragma once

#include <string_view>

#include "hostperf/base/result.h"

namespace hostperf::cmd {

enum class LogFormat { kLogfmt, kJson };

Result<LogFormat> ParseLogFormat(std::string_view text);

// Installs the default spdlog logger writing to stderr as logfmt or JSON
// lines. `level` is one of debug, info, warn, error; anything else is an error.
Result<void> SetUpLogging(std::string_view level, LogFormat format);

}  // namespace hostperf::cmd
