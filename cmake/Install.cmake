# `cmake --install` lays out headers, libathanor and an exported athanor::athanor target, so an
# outside project can `find_package(athanor)` (docs/using-athanor.md; tested by
# tests/consumer/run.sh).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY include/athanor DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The target's own INSTALL_INTERFACE already names the include directory (no INCLUDES
# DESTINATION here: it listed the directory twice in the exported targets file).
install(TARGETS athanor EXPORT athanorTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The athanor command line (apps/), when it is part of the build.
if(TARGET athanor_app)
  set_target_properties(athanor_app PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS athanor_app RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT athanorTargets NAMESPACE athanor:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/athanor)
configure_package_config_file(cmake/athanorConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/athanorConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/athanor)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/athanorConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/athanorConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/athanorConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/athanor)
