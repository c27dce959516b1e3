//===- InitAll.h - Everything fusec tools register --------------*- C++ -*-===//

#ifndef FUSEC_INITALL_H
#define FUSEC_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace fusec {

/// Adds the fuse dialect and the upstream dialects fusec uses to `registry`,
/// and registers fusec's passes and pipelines plus the upstream passes its
/// tools expose. The one list every tool calls.
void registerAll(mlir::DialectRegistry &registry);

} // namespace fusec

#endif // FUSEC_INITALL_H
