//===- CUDAEmitter.h - The CUDA C printer's state and areas -----*- C++ -*-===//
//
// Private to lib/Target/CUDA, in the shape of MLIR's TranslateToCpp.cpp: an
// Emitter holds one kernel's printing state and prints its names, types,
// literals and statements. Each op has a static printOperation overload in
// the file of its area; ops that differ only in a spelling (the math
// functions, C's binary operators, the PTX instructions without operands)
// share one family printer that looks the spelling up. Each area's
// TypeSwitch only forwards to those, and Emitter::printOperation only asks
// the areas in turn:
//   CUDAEmitter.cpp  the emitter, scf control flow, kernels, the module
//   ArithMath.cpp    arith, math and LLVM's constants
//   Memory.cpp       memref, vector, LLVM structs and shared memory
//   NVVM.cpp         nvvm, nvgpu, gpu intrinsics, LLVM inline asm and
//                    pointers: the inline PTX the NVVM lowering emits
// Prelude.cuh holds the helper code printed before the kernels.
//
// Each value's C expression is its name after its MLIR asm name (%47 becomes
// v47); scf.for/if/while become C loops and ifs. The C must compute what the
// PTX backend's code computes, so:
// - `index` is `int`, or `long long` in a gpu.module whose data layout makes
//   it 64 bits: the PTX backend lowers index arithmetic at that width.
// - f32 +, -, *, / are __fadd_rn and friends, which NVRTC never contracts
//   into FMAs (LLVM's NVPTX backend does not contract them either).
// - maximumf/minimumf propagate NaN (max.NaN.f32), unlike fmaxf.
// - Unsigned ops (divui, remui, shrui, cmpi ult, ...) convert their operands
//   to unsigned types; everything else is signed.
// - Inline assembly that touches memory or synchronises is `asm volatile`
//   with a "memory" clobber, as LLVM treats it.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_TARGET_CUDA_CUDAEMITTER_H
#define FUSEC_LIB_TARGET_CUDA_CUDAEMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Support/IndentedOstream.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <set>
#include <string>

namespace fusec::cuda {

/// A section of Prelude.cuh, printed once before the kernels if one uses it
/// (CUDAEmitter.cpp's kHelperSections gives their names).
enum class Helper {
  Half,
  BFloat16,
  Vec,
  Array,
  Bitcast,
  TensorMap,
  SharedMemory,
  MaximumF,
  MinimumF,
};

/// One `asm` statement: PTX text with %N operands, and its operands in
/// GCC's form ("=r"(x)).
struct AsmStatement {
  std::string ptx;
  llvm::SmallVector<std::string> outputs, inputs;
  /// Has effects beyond its outputs (memory, synchronisation): `volatile`
  /// and a "memory" clobber, so the compiler keeps it in place.
  bool sideEffects = true;
};

/// Prints one kernel's ops as C statements into `out`.
class Emitter {
public:
  /// `helpers` collects the prelude sections the kernel uses; `indexBits`
  /// is the width of `index` in the kernel's gpu.module.
  Emitter(mlir::AsmState &state, std::set<Helper> &helpers,
          llvm::raw_ostream &out, unsigned indexBits)
      : state(state), helpers(helpers), os(out), indexBits(indexBits) {}

  //===--------------------------------------------------------------------===//
  // Names, types and literals
  //===--------------------------------------------------------------------===//

  /// Names `v` and returns its name. Sibling regions may reuse an asm name
  /// (two loops' %arg3), but loop-carried variables live in the enclosing C
  /// scope, so names are unique per kernel.
  std::string define(mlir::Value v);
  /// The C expression that reads `v`.
  std::string expr(mlir::Value v);
  /// Makes `e` the C expression of `v`, with no statement.
  void bind(mlir::Value v, std::string e) { exprs[v] = std::move(e); }
  /// `v`'s C expression converted to the unsigned type of its width (a
  /// literal with a `u` suffix for constants).
  std::string unsignedExpr(mlir::Value v);
  /// The first value read without a C expression, if any.
  mlir::Value firstUndefined() const { return undefined; }

  mlir::FailureOr<std::string> typeName(mlir::Type type, mlir::Operation *op);
  std::string scalarTypeName(mlir::Type type);
  std::string unsignedTypeName(mlir::Type type);
  /// Bits of an integer or float; `index` has the module's index width.
  unsigned bitWidth(mlir::Type type) const {
    return mlir::isa<mlir::IndexType>(type) ? indexBits
                                            : type.getIntOrFloatBitWidth();
  }
  /// The C literal of a scalar constant.
  std::string literal(mlir::Attribute attr, mlir::Type type,
                      bool asUnsigned = false);
  /// Prints `helper`'s prelude section before the kernels.
  void require(Helper helper) { helpers.insert(helper); }

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  mlir::raw_indented_ostream &ostream() { return os; }
  /// `T name = init;` for `result`.
  mlir::LogicalResult assign(mlir::Value result, llvm::StringRef init,
                             mlir::Operation *op);
  /// `T name;` for `result`.
  mlir::LogicalResult declare(mlir::Value result, mlir::Operation *op);
  void printAsm(const AsmStatement &statement);
  /// Assigns `values` to `targets` as if at once (an scf.yield).
  void printParallelAssign(llvm::ArrayRef<std::string> targets,
                           mlir::ValueRange values);

  /// Prints `op` through its printOperation overload.
  mlir::LogicalResult printOperation(mlir::Operation &op);
  /// Prints `block`'s ops; its scf.yield or scf.condition assigns to
  /// `yieldTo`.
  mlir::LogicalResult printBlock(mlir::Block &block,
                                 llvm::ArrayRef<std::string> yieldTo = {});
  /// What the innermost block being printed yields to.
  llvm::ArrayRef<std::string> yieldTargets() const { return yieldTo; }

private:
  /// The C identifier of `v`: its asm name without the `%` (`%47` -> v47,
  /// `%thread_id_x` -> thread_id_x, `%12#3` -> v12_3).
  std::string identifier(mlir::Value v);
  std::string floatLiteral(const llvm::APFloat &value, mlir::Type type);

  mlir::AsmState &state;
  std::set<Helper> &helpers;
  mlir::raw_indented_ostream os;
  /// The width of `index`, from the gpu.module's data layout.
  unsigned indexBits;
  llvm::DenseMap<mlir::Value, std::string> exprs;
  llvm::StringSet<> names;
  /// The first value used without a C expression.
  mlir::Value undefined;
  llvm::ArrayRef<std::string> yieldTo;
};

//===----------------------------------------------------------------------===//
// Shared by the areas
//===----------------------------------------------------------------------===//

/// The element `indices` address in `memref` as `base + offset`, or
/// `base[offset]` when `subscript` (Memory.cpp).
mlir::FailureOr<std::string> printElement(Emitter &emitter, mlir::Value memref,
                                          mlir::ValueRange indices,
                                          mlir::Operation *op, bool subscript);
/// The 32-bit shared-memory address of that element (Memory.cpp).
mlir::FailureOr<std::string> printSharedAddress(Emitter &emitter,
                                                mlir::Value memref,
                                                mlir::ValueRange indices,
                                                mlir::Operation *op);

//===----------------------------------------------------------------------===//
// Each area's ops
//===----------------------------------------------------------------------===//

/// Prints ops that differ only in a spelling, which it looks up.
using FamilyPrinter = mlir::LogicalResult (*)(Emitter &, mlir::Operation *);

/// A TypeSwitch case that forwards a family's ops to `printer`.
inline auto printFamily(Emitter &emitter, FamilyPrinter printer) {
  return
      [&emitter, printer](mlir::Operation *op) { return printer(emitter, op); };
}

// Each prints `op` if it is one of its area's ops, and returns std::nullopt
// for the others.
std::optional<mlir::LogicalResult> printArithMathOp(Emitter &emitter,
                                                    mlir::Operation &op);
std::optional<mlir::LogicalResult> printMemoryOp(Emitter &emitter,
                                                 mlir::Operation &op);
std::optional<mlir::LogicalResult> printNVVMOp(Emitter &emitter,
                                               mlir::Operation &op);

} // namespace fusec::cuda

#endif // FUSEC_LIB_TARGET_CUDA_CUDAEMITTER_H
