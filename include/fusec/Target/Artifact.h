//===- Artifact.h - The launch plan both backends write ---------*- C++ -*-===//
//
// Every artifact starts with the same comment lines: a banner, the launch plan
// as one line of JSON and a record of how each kernel was configured
// (docs/Artifact.md). The PTX and CUDA C backends differ only in what follows
// them and in the plan's target.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TARGET_ARTIFACT_H
#define FUSEC_TARGET_ARTIFACT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fusec {

/// The artifact's leading comment lines, each ending in a newline, for the
/// one launch plan (a func.func from fusec-tile-kernels) in `module`:
/// "// fusec artifact v1", "// fusec-plan: {...}" with
/// `"target": {"kind": kind, "arch": arch}`, and "// fusec-kernels: [...]".
/// Fails with a located error when `module` holds other than one plan or the
/// plan holds an op with no meaning in a plan.
mlir::FailureOr<std::string> writeArtifactHeader(mlir::ModuleOp module,
                                                 llvm::StringRef kind,
                                                 llvm::StringRef arch);

} // namespace fusec

#endif // FUSEC_TARGET_ARTIFACT_H
