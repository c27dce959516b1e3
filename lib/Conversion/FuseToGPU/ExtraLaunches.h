//===- ExtraLaunches.h - Launches and buffers a kernel adds to its plan -*- C++
//-*-===//
//
// A family whose kernel takes several launches (batch norm in training: its
// statistics, a finalize, then the element pass) records on its gpu.func
// what the plan must do around the one launch fusec-tile-kernels makes of
// it: scratch buffers to allocate, which every function of the kernel takes
// after the kernel's results (before its tensor maps), and other gpu.funcs
// of the module to launch first, in order, over the same arguments (a
// split-K mainloop, a clone of the kernel, takes its tensor maps too).
// fusec-tile-kernels reads and drops
// these attributes; the plan (memref.alloc and gpu.launch_func) holds the
// rest.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_EXTRALAUNCHES_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_EXTRALAUNCHES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <array>
#include <string>
#include <vector>

namespace fusec::tiling {

/// The memref types of the scratch buffers (an array of type attributes).
constexpr llvm::StringLiteral kWorkspacesAttr = "fusec.workspaces";
/// The launches before the function's own (an array of dictionaries).
constexpr llvm::StringLiteral kLaunchFirstAttr = "fusec.launch_first";

/// A launch of gpu.func `func` before the kernel's own.
struct ExtraLaunch {
  std::string func;
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t sharedBytes = 0;
};

inline void recordExtraLaunches(mlir::gpu::GPUFuncOp func,
                                llvm::ArrayRef<mlir::MemRefType> workspaces,
                                llvm::ArrayRef<ExtraLaunch> launches) {
  mlir::Builder b(func.getContext());
  llvm::SmallVector<mlir::Attribute> types, steps;
  for (mlir::MemRefType type : workspaces)
    types.push_back(mlir::TypeAttr::get(type));
  for (const ExtraLaunch &launch : launches)
    steps.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("func", b.getStringAttr(launch.func)),
         b.getNamedAttr("grid", b.getDenseI64ArrayAttr(launch.grid)),
         b.getNamedAttr("block", b.getDenseI64ArrayAttr(launch.block)),
         b.getNamedAttr("shared", b.getI64IntegerAttr(launch.sharedBytes))}));
  func->setAttr(kWorkspacesAttr, b.getArrayAttr(types));
  func->setAttr(kLaunchFirstAttr, b.getArrayAttr(steps));
}

/// What `func` records (nothing for most kernels), dropping it.
inline void
takeExtraLaunches(mlir::gpu::GPUFuncOp func,
                  llvm::SmallVectorImpl<mlir::MemRefType> &workspaces,
                  std::vector<ExtraLaunch> &launches) {
  if (auto types = func->getAttrOfType<mlir::ArrayAttr>(kWorkspacesAttr))
    for (mlir::Attribute type : types)
      workspaces.push_back(llvm::cast<mlir::MemRefType>(
          llvm::cast<mlir::TypeAttr>(type).getValue()));
  if (auto steps = func->getAttrOfType<mlir::ArrayAttr>(kLaunchFirstAttr))
    for (mlir::Attribute step : steps) {
      auto dict = llvm::cast<mlir::DictionaryAttr>(step);
      ExtraLaunch launch;
      launch.func = dict.getAs<mlir::StringAttr>("func").str();
      auto grid = dict.getAs<mlir::DenseI64ArrayAttr>("grid").asArrayRef();
      auto block = dict.getAs<mlir::DenseI64ArrayAttr>("block").asArrayRef();
      llvm::copy(grid, launch.grid.begin());
      llvm::copy(block, launch.block.begin());
      launch.sharedBytes = dict.getAs<mlir::IntegerAttr>("shared").getInt();
      launches.push_back(std::move(launch));
    }
  func->removeAttr(kWorkspacesAttr);
  func->removeAttr(kLaunchFirstAttr);
}

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_EXTRALAUNCHES_H
