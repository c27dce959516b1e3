//===- PTX.h - The PTX backend and its artifact -----------------*- C++ -*-===//

#ifndef FUSEC_TARGET_PTX_H
#define FUSEC_TARGET_PTX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace fusec {

struct PTXTarget {
  /// "sm_80" or newer (TargetDescription's table).
  std::string chip = "sm_90";
  /// The PTX ISA features: a version the chip and CUDA 12+ accept.
  std::string features = "+ptx80";
  /// The CUDA toolkit whose libdevice supplies the math functions (exp,
  /// erf, tanh, ...): $CUDA_HOME, $CUDA_PATH, the toolkit holding the ptxas
  /// on $PATH, or /usr/local/cuda; empty when none has libdevice.
  std::string toolkitPath;
  /// Parses `arch` ("sm_90") and finds the toolkit; fails with a message for
  /// an architecture TargetDescription does not know, or without libdevice.
  static llvm::Expected<PTXTarget> parse(llvm::StringRef arch);
};

/// Registers what the PTX backend's lowering needs beyond upstream's
/// registrations: the conversion of nvgpu ops (ldmatrix, cp.async) inside
/// convert-gpu-to-nvvm, with its 32-bit indices.
void registerPTXBackendExtensions(mlir::DialectRegistry &registry);

/// Lowers every gpu.module to NVVM and then to PTX text held in a
/// gpu.binary, in process (no CUDA toolkit needed). `toBinary` false stops
/// at the NVVM dialect (fusec --emit=gpu).
void buildPTXPipeline(mlir::OpPassManager &pm, const PTXTarget &target,
                      bool toBinary = true);

/// The artifact of a lowered module holding one graph: the launch plan as a
/// JSON comment line, then the PTX (docs/Artifact.md).
mlir::FailureOr<std::string> writeArtifact(mlir::ModuleOp module,
                                           const PTXTarget &target);

} // namespace fusec

#endif // FUSEC_TARGET_PTX_H
