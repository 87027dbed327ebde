# CPack: `cpack -G DEB` in a build directory makes hostperf_<version>_<arch>.deb
# from the install rules, installed under /usr (config in /etc, unit in
# systemd's unit directory: systemd/install_system_files.cmake.in). Runtime
# dependencies come from dpkg-shlibdeps (package dpkg-dev).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hostperf)
set(CPACK_PACKAGE_VENDOR hostperf)
set(CPACK_PACKAGE_CONTACT "hostperf maintainers <hostperf@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "host performance sidecar for database clusters (Prometheus exporter)")
set(CPACK_PACKAGE_DESCRIPTION
    "hostperf_exporter runs low-impact variants of vcpuperf, vioperf, vnetperf and gpcheckperf on a schedule and exports the results to Prometheus; hostperf runs the full-strength checks on demand. Includes a hardened systemd unit, Grafana dashboards and Prometheus rules.")
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
configure_file(${PROJECT_SOURCE_DIR}/systemd/deb/postinst.in ${PROJECT_BINARY_DIR}/deb/postinst @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/deb/postinst
    ${PROJECT_SOURCE_DIR}/systemd/deb/prerm
    ${PROJECT_SOURCE_DIR}/systemd/deb/postrm
    ${PROJECT_SOURCE_DIR}/systemd/deb/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
