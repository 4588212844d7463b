#===- cmake/PagedAttnInstall.cmake - install and export rules --------------===#
#
# What `cmake --install` writes and how a consumer finds it: the compiler
# libraries in the export set PagedAttnTargets (imported as PagedAttn::<name>),
# the runtime in PagedAttnRuntimeTargets (PagedAttn::Runtime), and
# lib/cmake/PagedAttn/PagedAttnConfig.cmake that loads them. A runtime-only
# build (-DPA_BUILD_COMPILER=OFF) installs the runtime's set alone.
#
#===------------------------------------------------------------------------===#

include(CMakePackageConfigHelpers)

# Install folders, relative to the prefix; the config computes its paths from
# these.
set(PA_INSTALL_BINDIR bin)
set(PA_INSTALL_LIBDIR lib)
set(PA_INSTALL_INCLUDEDIR include)
set(PA_INSTALL_CMAKEDIR lib/cmake/PagedAttn)
set(PA_INSTALL_KERNELDIR share/paged_attn/kernels)

# pa_export_library(<target> <name>): installs the compiler library <target>
# and exports it as PagedAttn::<name>, with the project's header folders
# (source and generated in the build, include/ once installed). MLIR's own
# include folders and definitions are added by PagedAttnConfig.cmake, from
# the MLIR the consumer finds.
function(pa_export_library target name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${PA_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} INTERFACE cxx_std_17)
  install(TARGETS ${target} EXPORT PagedAttnTargets
    ARCHIVE DESTINATION ${PA_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${PA_INSTALL_LIBDIR})
  set_property(GLOBAL APPEND PROPERTY PA_EXPORTED_LIBRARIES ${name})
endfunction()

# The public headers: the sources (.h, and .td for dialects that build on
# ours) and what TableGen generated from them (.inc).
function(pa_install_headers)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/PagedAttn
    DESTINATION ${PA_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
  install(DIRECTORY ${PROJECT_BINARY_DIR}/include/PagedAttn
    DESTINATION ${PA_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.inc"
    PATTERN "CMakeFiles" EXCLUDE)
endfunction()

# The export files and PagedAttnConfig.cmake (+ version). Called last, when
# every exported target exists.
function(pa_install_package_config)
  if(PA_BUILD_COMPILER)
    install(EXPORT PagedAttnTargets NAMESPACE PagedAttn::
      DESTINATION ${PA_INSTALL_CMAKEDIR})
    get_property(PA_EXPORTED_LIBRARIES GLOBAL PROPERTY PA_EXPORTED_LIBRARIES)
  endif()
  if(PA_RUNTIME_BUILT)
    install(EXPORT PagedAttnRuntimeTargets NAMESPACE PagedAttn::
      DESTINATION ${PA_INSTALL_CMAKEDIR})
  endif()
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/PagedAttnConfig.cmake.in
    ${PROJECT_BINARY_DIR}/cmake/PagedAttnConfig.cmake
    INSTALL_DESTINATION ${PA_INSTALL_CMAKEDIR}
    PATH_VARS PA_INSTALL_KERNELDIR)
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/cmake/PagedAttnConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/cmake/PagedAttnConfig.cmake
                ${PROJECT_BINARY_DIR}/cmake/PagedAttnConfigVersion.cmake
    DESTINATION ${PA_INSTALL_CMAKEDIR})
endfunction()
