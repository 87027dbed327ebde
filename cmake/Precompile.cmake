# Precompiled headers: the third-party headers nearly every file includes,
# parsed once per target instead of once per file. nlohmann/json alone costs
# about 3 s per file at -O2 on the CI's machines, gmock 2 s, spdlog 1.7 s; the
# CI builds the tree three times (release, ASan, TSan) within its hour.
# OFF builds the same code from the same sources: each file still includes
# what it uses (a missing include shows only in an OFF build, which the CI
# does not make: its hour has no room for a fourth build).
option(HOSTPERF_PRECOMPILE_HEADERS "Precompile the heavy third-party headers per target" ON)

# hostperf_precompile_headers(<target> [SPDLOG] [GTEST]): SPDLOG only for
# targets that link spdlog::spdlog (its compile definitions pick the compiled
# library), GTEST for the test suites.
function(hostperf_precompile_headers target)
  cmake_parse_arguments(arg "SPDLOG;GTEST" "" "" ${ARGN})
  if(NOT HOSTPERF_PRECOMPILE_HEADERS)
    return()
  endif()
  set(headers <chrono> <filesystem> <functional> <map> <memory> <optional> <string> <vector> <nlohmann/json.hpp>)
  if(arg_SPDLOG)
    list(APPEND headers <spdlog/spdlog.h>)
  endif()
  if(arg_GTEST)
    list(APPEND headers <gtest/gtest.h> <gmock/gmock.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
