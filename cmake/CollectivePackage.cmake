# Installs the exported target collective::collective with a CMake package
# (find_package(collective)) and a pkg-config file (collective.pc).
include(CMakePackageConfigHelpers)

install(TARGETS collective EXPORT collectiveTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/libcollective/include/collective
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN "*.in" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/generated/collective/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/collective)
install(EXPORT collectiveTargets NAMESPACE collective::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collective)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/collectiveConfig.cmake.in
  ${PROJECT_BINARY_DIR}/collectiveConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collective)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/collectiveConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/collectiveConfig.cmake
              ${PROJECT_BINARY_DIR}/collectiveConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/collective)

file(RELATIVE_PATH COLLECTIVE_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" COLLECTIVE_PC_TO_PREFIX "${COLLECTIVE_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/collective.pc.in
               ${PROJECT_BINARY_DIR}/collective.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/collective.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
