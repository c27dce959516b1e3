# Self-contained fusec (FUSEC_LINK_MLIR_DYLIB=OFF).
#
# The Debian LLVM/MLIR packages are built with LLVM_LINK_LLVM_DYLIB, so every
# exported MLIR target (static ones included) lists the `LLVM` dylib target
# (libLLVM.so.22.1) in its INTERFACE_LINK_LIBRARIES. Rewrite those interfaces
# to use LLVM's own static component libraries instead, and make LLVMSupport's
# third-party dependencies static (or drop the ones fusec never reaches), so
# that the result needs only glibc at run time.
#
# Included from the top-level CMakeLists.txt after find_package(MLIR).

# LLVM components the MLIR libraries fusec links actually reach (LLVM IR
# export, NVVM target -> NVPTX backend, the LLVM dialect's IR/bitcode
# helpers). Each component's own imported target brings its dependencies, so
# only the top of the graph needs listing. If a link fails with undefined
# llvm:: symbols, add the component that defines them here.
set(FUSEC_STATIC_LLVM_COMPONENTS
  Core Support Demangle TargetParser BinaryFormat Remarks
  Analysis TransformUtils ScalarOpts InstCombine AggressiveInstCombine ipo
  Vectorize Passes IRReader AsmParser BitReader BitWriter Linker Object
  Target MC MCParser CodeGen AsmPrinter SelectionDAG
  FrontendOpenMP FrontendOffloading
  NVPTXCodeGen NVPTXDesc NVPTXInfo
  CACHE STRING "LLVM components linked statically into fusec")
llvm_map_components_to_libnames(_fusec_llvm_static_libs
  ${FUSEC_STATIC_LLVM_COMPONENTS})

add_library(FusecLLVMStatic INTERFACE)
target_link_libraries(FusecLLVMStatic INTERFACE ${_fusec_llvm_static_libs})

# MLIR targets: LLVM (dylib) -> FusecLLVMStatic.
foreach(_t IN LISTS MLIR_EXPORTED_TARGETS)
  if(NOT TARGET ${_t})
    continue()
  endif()
  get_target_property(_libs ${_t} INTERFACE_LINK_LIBRARIES)
  if(NOT _libs)
    continue()
  endif()
  list(TRANSFORM _libs REPLACE "^LLVM$" "FusecLLVMStatic")
  list(TRANSFORM _libs REPLACE "^\\$<LINK_ONLY:LLVM>$"
       "$<LINK_ONLY:FusecLLVMStatic>")
  set_target_properties(${_t} PROPERTIES INTERFACE_LINK_LIBRARIES "${_libs}")
endforeach()

# LLVMSupport: "rt;dl;m;.../libz3.so;ZLIB::ZLIB;zstd::libzstd_shared;
# LLVMDemangle". Z3 backs only the (unused) SMT solver API: drop it. zlib and
# zstd back llvm::compression; link their static archives when present
# (zlib1g-dev and libzstd-dev ship libz.a and libzstd.a), else the shared
# libraries, else nothing (the linker then reports what is missing).
find_library(FUSEC_ZLIB_STATIC NAMES libz.a)
find_library(FUSEC_ZSTD_STATIC NAMES libzstd.a)
find_library(FUSEC_ZSTD_SHARED NAMES zstd libzstd.so.1)
get_target_property(_libs LLVMSupport INTERFACE_LINK_LIBRARIES)
set(_fusec_support_libs)
foreach(_l IN LISTS _libs)
  if(_l MATCHES "z3")
    continue()
  elseif(_l STREQUAL "ZLIB::ZLIB" AND FUSEC_ZLIB_STATIC)
    set(_l "${FUSEC_ZLIB_STATIC}")
  elseif(_l MATCHES "^zstd::")
    # Debian's libzstd.a is built as position-independent executable code:
    # it links into libfusec_jit.so because --exclude-libs hides its
    # symbols there. Static, the wheel needs no libzstd.so.1 (manylinux
    # systems need not have it).
    if(FUSEC_ZSTD_STATIC)
      set(_l "${FUSEC_ZSTD_STATIC}")
    elseif(FUSEC_ZSTD_SHARED)
      set(_l "${FUSEC_ZSTD_SHARED}")
    else()
      continue()
    endif()
  endif()
  list(APPEND _fusec_support_libs "${_l}")
endforeach()
set_target_properties(LLVMSupport PROPERTIES
  INTERFACE_LINK_LIBRARIES "${_fusec_support_libs}")
message(STATUS "fusec static LLVMSupport deps: ${_fusec_support_libs}")

# Executables: static libstdc++/libgcc (portable across distributions), drop
# unreferenced sections (LLVM's archives are built with -ffunction-sections).
string(APPEND CMAKE_EXE_LINKER_FLAGS
  " -static-libstdc++ -static-libgcc -Wl,--gc-sections -Wl,--as-needed")

# `ninja fusec-stripped` -> bin/fusec.stripped, the binary to ship.
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/bin/fusec.stripped
  COMMAND ${CMAKE_STRIP} -o ${CMAKE_BINARY_DIR}/bin/fusec.stripped
          $<TARGET_FILE:fusec>
  DEPENDS fusec
  COMMENT "Stripping fusec")
add_custom_target(fusec-stripped
  DEPENDS ${CMAKE_BINARY_DIR}/bin/fusec.stripped)
