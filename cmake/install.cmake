# Installation and the package files of Saltus (docs/install.md).
include(CMakePackageConfigHelpers)

set_target_properties(saltus PROPERTIES EXPORT_NAME core)
set_target_properties(saltus_multibody PROPERTIES EXPORT_NAME multibody)
set_target_properties(saltus_equations PROPERTIES EXPORT_NAME equations)
set_target_properties(saltus_optimize PROPERTIES EXPORT_NAME optimize)
set_target_properties(saltus_examples PROPERTIES EXPORT_NAME examples)
# saltus::saltus: every part at once.
add_library(saltus_package INTERFACE)
set_target_properties(saltus_package PROPERTIES EXPORT_NAME saltus)
target_link_libraries(saltus_package INTERFACE saltus saltus_multibody saltus_equations saltus_optimize saltus_examples)

install(TARGETS saltus saltus_multibody saltus_equations saltus_optimize saltus_examples saltus_package
  EXPORT saltusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS saltus_app RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The plot script the command runs for --out plots and --animate (docs/plots.md).
install(PROGRAMS scripts/saltus-plot DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/saltus examples/include/saltus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(SALTUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/saltus)
install(EXPORT saltusTargets NAMESPACE saltus:: DESTINATION ${SALTUS_CMAKE_DIR})
configure_package_config_file(cmake/saltusConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/saltusConfig.cmake
  INSTALL_DESTINATION ${SALTUS_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/saltusConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/saltusConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/saltusConfigVersion.cmake
  DESTINATION ${SALTUS_CMAKE_DIR})

# The .pc file names its prefix relative to where it lies (../.. for lib/pkgconfig), so an
# install with --prefix elsewhere works too.
file(RELATIVE_PATH SALTUS_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(cmake/saltus.pc.in ${CMAKE_CURRENT_BINARY_DIR}/saltus.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/saltus.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
