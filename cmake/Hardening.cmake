# Debian's hardening flags, as `DEB_BUILD_MAINT_OPTIONS=hardening=+all
# dpkg-buildflags` gives them on amd64, plus what newer dpkg (Debian 13) adds
# there and `hardening-check` looks for: stack clash protection and
# control-flow protection (CET) where the compiler has them (fixed here rather than read from
# dpkg-buildflags: its -ffile-prefix-map depends on the directory it runs in,
# and the flags are part of the build fingerprint, cmake/BuildInfo.cmake):
#   CPPFLAGS  -D_FORTIFY_SOURCE=2 (needs optimisation: not in Debug builds)
#   CXXFLAGS  -fstack-protector-strong -Wformat -Werror=format-security
#             -fstack-clash-protection -fcf-protection (where supported)
#   LDFLAGS   -Wl,-z,relro -Wl,-z,now, and PIE executables
# `hardening-check` (Debian's devscripts) passes on both binaries; the package
# test checks it (tests/packaging/deb_test.sh). On by default except in the
# sanitizer builds, which keep their own flags (TSan's -O1 among them).
if(HOSTPERF_SANITIZE OR HOSTPERF_SANITIZE_THREAD)
  set(_hostperf_hardening_default OFF)
else()
  set(_hostperf_hardening_default ON)
endif()
option(HOSTPERF_HARDENING "Build with Debian's hardening flags (fortify, stack protector, relro, bindnow, PIE)"
       ${_hostperf_hardening_default})

set(HOSTPERF_HARDENING_FLAGS "")
if(HOSTPERF_HARDENING)
  include(CheckPIESupported)
  check_pie_supported(LANGUAGES CXX)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  set(_hostperf_hardening_compile -fstack-protector-strong -Wformat -Werror=format-security)
  include(CheckCXXCompilerFlag)
  foreach(_flag -fstack-clash-protection -fcf-protection)
    string(MAKE_C_IDENTIFIER "HOSTPERF_HAVE${_flag}" _have)
    check_cxx_compiler_flag(${_flag} ${_have})
    if(${_have})
      list(APPEND _hostperf_hardening_compile ${_flag})
    endif()
  endforeach()
  add_compile_options(${_hostperf_hardening_compile})
  # _FORTIFY_SOURCE only acts with optimisation (GCC warns without it). A
  # level already given in CXXFLAGS (e.g. by a Debian build) wins.
  string(TOUPPER "${CMAKE_BUILD_TYPE}" _hostperf_hardening_bt)
  set(_hostperf_hardening_fortify "")
  if(NOT _hostperf_hardening_bt STREQUAL "DEBUG"
     AND NOT "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_hostperf_hardening_bt}}" MATCHES "_FORTIFY_SOURCE")
    set(_hostperf_hardening_fortify -D_FORTIFY_SOURCE=2)
    add_compile_definitions(_FORTIFY_SOURCE=2)
  endif()
  add_link_options(LINKER:-z,relro LINKER:-z,now)
  list(JOIN _hostperf_hardening_compile " " _hostperf_hardening_compile_text)
  string(STRIP "${_hostperf_hardening_fortify} ${_hostperf_hardening_compile_text} -fPIE -pie -Wl,-z,relro -Wl,-z,now"
         HOSTPERF_HARDENING_FLAGS)
endif()

# Reproducible builds: the debug info (from which the linker's build-id is
# computed, and which stripping removes only after) names the build
# directory; mapped to ".", as Debian's dpkg-buildflags does, two build
# directories of one tree give byte-identical binaries and packages. Not part
# of the build fingerprint (it does not change the machine code).
add_compile_options(-fdebug-prefix-map=${PROJECT_BINARY_DIR}=.)
