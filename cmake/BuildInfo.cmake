# Build facts exported as hostperf_build_info and used to key per-binary CPU
# baselines: vcpuperf-style timings are only comparable for the same compiler,
# version and flags, so those (plus the workload's own version) make the
# fingerprint. Rebuilding with the same toolchain keeps the baseline.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _hostperf_bt)
set(HOSTPERF_BUILD_FLAGS "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_hostperf_bt}}")
string(STRIP "${HOSTPERF_BUILD_FLAGS}" HOSTPERF_BUILD_FLAGS)
# The hardening flags (cmake/Hardening.cmake) change the machine code: adding
# them changed every fingerprint once (docs/operator-guide.md, Upgrading).
if(HOSTPERF_HARDENING_FLAGS)
  string(APPEND HOSTPERF_BUILD_FLAGS " ${HOSTPERF_HARDENING_FLAGS}")
endif()
if(HOSTPERF_SANITIZE)
  string(APPEND HOSTPERF_BUILD_FLAGS " -fsanitize=address,undefined -fno-sanitize=vptr -O1")
endif()
if(HOSTPERF_SANITIZE_THREAD)
  string(APPEND HOSTPERF_BUILD_FLAGS " -fsanitize=thread -O1")
endif()
set(HOSTPERF_COMPILER "${CMAKE_CXX_COMPILER_ID}")
set(HOSTPERF_COMPILER_VERSION "${CMAKE_CXX_COMPILER_VERSION}")
# Bump when the CPU workload's code changes: it changes the machine code too.
set(HOSTPERF_CPU_WORKLOAD_VERSION 1)
string(SHA256 _hostperf_fp
  "${HOSTPERF_COMPILER}|${HOSTPERF_COMPILER_VERSION}|${HOSTPERF_BUILD_FLAGS}|${CMAKE_SYSTEM_PROCESSOR}|workload-${HOSTPERF_CPU_WORKLOAD_VERSION}")
string(SUBSTRING "${_hostperf_fp}" 0 16 HOSTPERF_FINGERPRINT)

set(HOSTPERF_REVISION "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    OUTPUT_VARIABLE _hostperf_rev OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET RESULT_VARIABLE _hostperf_rev_rc)
  if(_hostperf_rev_rc EQUAL 0 AND _hostperf_rev)
    set(HOSTPERF_REVISION "${_hostperf_rev}")
  endif()
endif()
message(STATUS "hostperf build fingerprint: ${HOSTPERF_FINGERPRINT} (${HOSTPERF_COMPILER} ${HOSTPERF_COMPILER_VERSION}, '${HOSTPERF_BUILD_FLAGS}')")
