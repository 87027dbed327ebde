# What Debian policy wants in /usr/share/doc/hostperf and /usr/share/man, for
# the .deb and `cmake --install` alike (from cmake/Packaging.cmake):
#   copyright            machine-readable (DEP-5): systemd/deb/copyright
#   changelog.Debian.gz  systemd/deb/changelog, plus an entry for a site's own
#                        revision (CPACK_DEBIAN_PACKAGE_RELEASE) when it is not
#                        the top entry's
#   changelog.gz         the upstream changelog, CHANGELOG.md
#   docs/                runbooks, metrics reference and the rest of docs/
#   probes/<name>/       each probe's metrics page (probes/<name>/metrics.md)
#   examples/            the annotated config (systemd/install_system_files.cmake.in)
#   man1/                hostperf_exporter.1.gz and hostperf.1.gz, generated
#                        from the binaries' --help by help2man
# Compressed with gzip -9n (no name, no timestamp: reproducible).
set(_deb_src ${PROJECT_SOURCE_DIR}/systemd/deb)
set(_deb_out ${PROJECT_BINARY_DIR}/deb)
find_program(HOSTPERF_GZIP gzip REQUIRED)

# changelog.Debian: the checked-in entries, and SOURCE_DATE_EPOCH from the top
# entry's date (as dpkg-buildpackage does) unless the environment sets one.
file(READ ${_deb_src}/changelog _changelog)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_deb_src}/changelog)
if(NOT _changelog MATCHES "^hostperf \\(([^)]+)\\)")
  message(FATAL_ERROR "${_deb_src}/changelog: the first line is not 'hostperf (<version>) ...'")
endif()
set(_changelog_top_version "${CMAKE_MATCH_1}")
if(NOT _changelog MATCHES "\n -- [^\n]+>  ([^\n]+)\n")
  message(FATAL_ERROR "${_deb_src}/changelog: no ' -- maintainer  date' line")
endif()
set(_changelog_top_date "${CMAKE_MATCH_1}")
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  set(HOSTPERF_SOURCE_DATE_EPOCH "$ENV{SOURCE_DATE_EPOCH}")
else()
  execute_process(COMMAND date -u -d "${_changelog_top_date}" +%s OUTPUT_VARIABLE HOSTPERF_SOURCE_DATE_EPOCH
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _date_rc)
  if(NOT _date_rc EQUAL 0)
    message(FATAL_ERROR "${_deb_src}/changelog: cannot read the date '${_changelog_top_date}'")
  endif()
endif()
if(NOT _changelog_top_version STREQUAL HOSTPERF_DEB_VERSION)
  if(NOT _changelog_top_version MATCHES "^${PROJECT_VERSION}-")
    message(FATAL_ERROR "${_deb_src}/changelog: the top entry is ${_changelog_top_version}, the project "
                        "${PROJECT_VERSION}: add an entry for the new version")
  endif()
  # A site's rebuild with its own revision: an entry of its own on top.
  execute_process(COMMAND date -u -R -d "@${HOSTPERF_SOURCE_DATE_EPOCH}" OUTPUT_VARIABLE _rebuild_date
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  string(PREPEND _changelog "hostperf (${HOSTPERF_DEB_VERSION}) unstable; urgency=medium\n\n"
         "  * Rebuilt with Debian revision ${CPACK_DEBIAN_PACKAGE_RELEASE}.\n\n"
         " -- ${CPACK_DEBIAN_PACKAGE_MAINTAINER}  ${_rebuild_date}\n\n")
endif()
file(CONFIGURE OUTPUT ${_deb_out}/changelog.Debian CONTENT "${_changelog}")

set(_doc_outputs ${_deb_out}/changelog.Debian.gz ${_deb_out}/changelog.gz)
add_custom_command(
  OUTPUT ${_deb_out}/changelog.Debian.gz
  COMMAND ${HOSTPERF_GZIP} -9nkf ${_deb_out}/changelog.Debian
  DEPENDS ${_deb_out}/changelog.Debian VERBATIM)
add_custom_command(
  OUTPUT ${_deb_out}/changelog.gz
  COMMAND ${CMAKE_COMMAND} -E copy ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${_deb_out}/changelog
  COMMAND ${HOSTPERF_GZIP} -9nkf ${_deb_out}/changelog
  DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md VERBATIM)

# Man pages from --help (help2man, with the FILES and SEE ALSO sections of
# systemd/deb/<binary>.h2m). tests/packaging/man_pages_test.sh checks that
# every flag of --help is in the page.
# Not in the ThreadSanitizer build: its binaries need `setarch -R` to start on
# newer kernels (.ci/test). The AddressSanitizer binaries run without leak
# detection here.
find_program(HOSTPERF_HELP2MAN help2man)
set(_man_outputs "")
set(HOSTPERF_MAN_PAGES OFF)
if(HOSTPERF_HELP2MAN AND NOT HOSTPERF_SANITIZE_THREAD)
  set(HOSTPERF_MAN_PAGES ON)
  set(_man_hostperf_exporter "low-impact host performance checks for Prometheus (the hostperf daemon)")
  set(_man_hostperf "full-strength host performance checks on demand, across a cluster")
  foreach(_binary hostperf_exporter hostperf)
    add_custom_command(
      OUTPUT ${_deb_out}/man/${_binary}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_deb_out}/man
      COMMAND ${CMAKE_COMMAND} -E env SOURCE_DATE_EPOCH=${HOSTPERF_SOURCE_DATE_EPOCH} ASAN_OPTIONS=detect_leaks=0
              ${HOSTPERF_HELP2MAN}
              --no-info --no-discard-stderr --section=1 --version-string=${PROJECT_VERSION}
              "--name=${_man_${_binary}}" --include=${_deb_src}/${_binary}.h2m
              --output=${_deb_out}/man/${_binary}.1 $<TARGET_FILE:${_binary}>
      COMMAND ${HOSTPERF_GZIP} -9nf ${_deb_out}/man/${_binary}.1
      DEPENDS ${_binary} ${_deb_src}/${_binary}.h2m VERBATIM)
    list(APPEND _man_outputs ${_deb_out}/man/${_binary}.1.gz)
  endforeach()
  install(FILES ${_man_outputs} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
elseif(NOT HOSTPERF_HELP2MAN)
  message(WARNING "help2man not found: no man pages (install Debian's help2man; .ci/deps does)")
endif()
add_custom_target(hostperf_debian_files ALL DEPENDS ${_doc_outputs} ${_man_outputs})

install(FILES ${_deb_src}/copyright ${_doc_outputs} DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# Each probe's metrics page, probes/<name>/metrics.md, where docs/metrics.md's
# relative links find it.
file(GLOB _probe_pages RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/probes/*/metrics.md)
foreach(_page IN LISTS _probe_pages)
  get_filename_component(_page_dir ${_page} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${_page} DESTINATION ${CMAKE_INSTALL_DOCDIR}/${_page_dir})
endforeach()
if(EXISTS ${_deb_src}/lintian-overrides)
  install(FILES ${_deb_src}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME hostperf)
endif()
