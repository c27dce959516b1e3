//===- CUDA.h - The CUDA C backend and its artifact -------------*- C++ -*-===//
//
// Prints the tiled stage's kernels (gpu.funcs of arith, math, scf, memref,
// vector, gpu, nvgpu and nvvm ops) as readable CUDA C that NVRTC compiles
// with no include path beyond the headers it ships. The kernels keep the PTX
// backend's names, parameters and numerics, so one launch plan runs either.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TARGET_CUDA_H
#define FUSEC_TARGET_CUDA_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fusec {

/// Prints every kernel of every gpu.module in `module` as one CUDA C
/// translation unit: `extern "C" __global__` functions with the kernels'
/// names and parameters (a pointer per buffer, a `__grid_constant__` tensor
/// map by value), the block size as `__launch_bounds__`, all shared memory
/// in one `extern __shared__` array. Fails with an error located at the
/// first op or type it cannot print.
mlir::LogicalResult printCUDA(mlir::ModuleOp module, llvm::raw_ostream &os);

/// The artifact of a tiled module holding one graph: the launch plan as
/// comment lines with target kind "cuda" for `arch`, then the CUDA C
/// (docs/Artifact.md).
mlir::FailureOr<std::string> writeCUDAArtifact(mlir::ModuleOp module,
                                               llvm::StringRef arch);

/// Registers the `fusec-to-cuda` translation (fusec-translate).
void registerCUDATranslation();

} // namespace fusec

#endif // FUSEC_TARGET_CUDA_H
