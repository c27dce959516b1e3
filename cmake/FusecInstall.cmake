# `cmake --install build --prefix P`: the headers, libfusec_jit.so and
# libfusec_runtime.so, the tools, and P/lib/cmake/fusec/fusecConfig.cmake,
# which gives host programs the targets fusec::jit and fusec::runtime
# (examples/jit builds against it). `--component library` installs the
# libraries, headers and package files alone; `--component tools` the tools.
include(CMakePackageConfigHelpers)

install(TARGETS fusec_jit fusec_runtime EXPORT fusecTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library)
install(TARGETS fusec fusec-opt fusec-runner fusec-compile-times
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
install(FILES
  ${PROJECT_SOURCE_DIR}/include/fusec/JIT.h
  ${PROJECT_SOURCE_DIR}/include/fusec/fusec_jit.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fusec COMPONENT library)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/fusec/runtime
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fusec COMPONENT library)

set(FUSEC_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fusec)
install(EXPORT fusecTargets NAMESPACE fusec:: DESTINATION ${FUSEC_CMAKE_DIR}
  COMPONENT library)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/fusecConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fusecConfig.cmake
  INSTALL_DESTINATION ${FUSEC_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/fusecConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/fusecConfig.cmake
  ${PROJECT_BINARY_DIR}/fusecConfigVersion.cmake
  DESTINATION ${FUSEC_CMAKE_DIR} COMPONENT library)
