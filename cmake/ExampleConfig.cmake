# The example config: the shared keys (config/hostperf.toml), then each probe
# folder's own [probes.<name>] part (probes/<name>/hostperf.toml), so that a
# new probe documents its keys in its own folder. Written at configure time to
# ${PROJECT_BINARY_DIR}/hostperf.toml (installed as
# share/doc/hostperf/examples/hostperf.toml, read by the config tests); editing
# a part re-runs the configure step.
#
# The config installed as etc/hostperf/hostperf.toml (a conffile in the .deb)
# is config/hostperf.conffile.toml: comments only, no key, no default, so a
# changed default never changes the conffile and an upgrade never stops at a
# conffile prompt. It loads to the built-in defaults (tests/config).
set(HOSTPERF_EXAMPLE_CONFIG ${PROJECT_BINARY_DIR}/hostperf.toml)
set(HOSTPERF_CONFFILE ${PROJECT_SOURCE_DIR}/config/hostperf.conffile.toml)
file(GLOB _hostperf_config_parts CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/probes/*/hostperf.toml)
list(SORT _hostperf_config_parts)
set(_hostperf_config_sources ${PROJECT_SOURCE_DIR}/config/hostperf.toml ${_hostperf_config_parts})
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_hostperf_config_sources})
set(_hostperf_config_text "")
foreach(_part IN LISTS _hostperf_config_sources)
  file(READ ${_part} _text)
  if(NOT _part STREQUAL "${PROJECT_SOURCE_DIR}/config/hostperf.toml")
    # The part's own two-line header says where it lives; the assembled file
    # need not repeat it for every section.
    string(REGEX REPLACE "^# The \\[probes\\.[a-z_]+\\] part of the example config[^\n]*\n#[^\n]*\n" "" _text "${_text}")
  endif()
  string(APPEND _hostperf_config_text "\n${_text}")
endforeach()
string(REGEX REPLACE "^\n" "" _hostperf_config_text "${_hostperf_config_text}")
file(CONFIGURE OUTPUT ${HOSTPERF_EXAMPLE_CONFIG} CONTENT "${_hostperf_config_text}" @ONLY)
