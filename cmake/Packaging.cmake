# CPack: `cpack -G DEB` in a build directory makes hostperf_<version>-<revision>_<arch>.deb
# from the install rules, installed under /usr (config in /etc, unit in
# systemd's unit directory: systemd/install_system_files.cmake.in). Runtime
# dependencies come from dpkg-shlibdeps (package dpkg-dev).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hostperf)
set(CPACK_PACKAGE_VENDOR hostperf)
# Sites that build their own package set their own maintainer (and, for a
# fixed rebuild of the same upstream version, a new Debian revision):
#   cmake -DCPACK_DEBIAN_PACKAGE_MAINTAINER="Ops <ops@corp.example>" -DCPACK_DEBIAN_PACKAGE_RELEASE=2 ...
# The default is a reserved domain (RFC 2606) that lintian accepts and that
# delivers no mail to anyone.
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "hostperf maintainers <hostperf@example.org>"
    CACHE STRING "Maintainer field of the .deb (and of a generated changelog.Debian entry)")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1 CACHE STRING "Debian revision of the .deb: version ${PROJECT_VERSION}-<revision>")
set(CPACK_PACKAGE_CONTACT "${CPACK_DEBIAN_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(HOSTPERF_DEB_VERSION "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/hostperf/hostperf")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "host performance sidecar for database clusters (Prometheus exporter)")
# Wrapped: CPack indents each line of the long description by one space.
set(CPACK_PACKAGE_DESCRIPTION "hostperf_exporter runs low-impact variants of vcpuperf, vioperf, vnetperf
and gpcheckperf on a schedule and exports the results to Prometheus;
hostperf runs the full-strength checks on demand.

Includes a hardened systemd unit, Grafana dashboards, Prometheus rules
and runbooks.")
# The install script needs the final prefix (/usr) at install time to place
# the config in /etc: install with DESTDIR into the staging directory.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_PACKAGE_NAME hostperf)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "systemd")
# postinst creates the service user with useradd (passwd) where
# systemd-sysusers (systemd, only recommended) is missing. libcurl4: loaded
# with dlopen() (config/base/src/http_client.cc), so dpkg-shlibdeps cannot
# see it; 7.85 is the first with CURLOPT_PROTOCOLS_STR, the newest option the client sets.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd, libcurl4 (>= 7.85)")
configure_file(${PROJECT_SOURCE_DIR}/systemd/deb/postinst.in ${PROJECT_BINARY_DIR}/deb/postinst @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/deb/postinst
    ${PROJECT_SOURCE_DIR}/systemd/deb/prerm
    ${PROJECT_SOURCE_DIR}/systemd/deb/postrm
    ${PROJECT_SOURCE_DIR}/systemd/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(${CMAKE_CURRENT_LIST_DIR}/DebianFiles.cmake)
# Reproducible packages: cpack runs with SOURCE_DATE_EPOCH (the date of the
# top changelog.Debian entry unless the environment sets one), which CPack
# uses for the archive's timestamps.
configure_file(${CMAKE_CURRENT_LIST_DIR}/CPackProjectConfig.cmake.in ${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/CPackProjectConfig.cmake)

include(CPack)
