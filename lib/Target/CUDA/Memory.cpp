//===- Memory.cpp - Buffers, vectors and structs as CUDA C ----------------===//
//
// memref loads and stores index a typed pointer with the layout's static
// strides at the index width; vector<NxT> is the prelude's fusec_vec (a wide
// access where the alignment allows one, element by element otherwise) and
// an LLVM struct its fusec_array. All shared memory is the prelude's
// fusec_smem, the launch's dynamic shared memory.
//
//===----------------------------------------------------------------------===//

#include "CUDAEmitter.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace fusec::cuda;

//===----------------------------------------------------------------------===//
// Addresses
//===----------------------------------------------------------------------===//

FailureOr<std::string> fusec::cuda::printElement(Emitter &emitter, Value memref,
                                                 ValueRange indices,
                                                 Operation *op,
                                                 bool subscript) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return op->emitOpError("accesses ")
           << type << ", whose layout has no static strides";
  // Index arithmetic at the PTX backend's index width.
  SmallVector<std::string> terms;
  int64_t constant = offset;
  for (auto [index, stride] : llvm::zip_equal(indices, strides)) {
    if (std::optional<int64_t> c = getConstantIntValue(index)) {
      constant += *c * stride;
      continue;
    }
    terms.push_back(stride == 1
                        ? emitter.expr(index)
                        : emitter.expr(index) + " * " + std::to_string(stride));
  }
  if (constant || terms.empty())
    terms.push_back(std::to_string(constant));
  std::string sum = llvm::join(terms, " + ");
  if (subscript)
    return emitter.expr(memref) + "[" + sum + "]";
  if (sum == "0")
    return emitter.expr(memref);
  return emitter.expr(memref) + " + " + sum;
}

static bool isShared(MemRefType type) {
  auto space =
      dyn_cast_if_present<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

FailureOr<std::string> fusec::cuda::printSharedAddress(Emitter &emitter,
                                                       Value memref,
                                                       ValueRange indices,
                                                       Operation *op) {
  if (!isShared(cast<MemRefType>(memref.getType())))
    return op->emitOpError("expects a workgroup memref, found ")
           << memref.getType();
  FailureOr<std::string> pointer =
      printElement(emitter, memref, indices, op, false);
  if (failed(pointer))
    return failure();
  return "(unsigned)__cvta_generic_to_shared(" + *pointer + ")";
}

//===----------------------------------------------------------------------===//
// memref and shared memory
//===----------------------------------------------------------------------===//

static LogicalResult printOperation(Emitter &emitter, memref::LoadOp op) {
  FailureOr<std::string> e =
      printElement(emitter, op.getMemRef(), op.getIndices(), op, true);
  return failed(e) ? failure() : emitter.assign(op, *e, op);
}

static LogicalResult printOperation(Emitter &emitter, memref::StoreOp op) {
  FailureOr<std::string> e =
      printElement(emitter, op.getMemRef(), op.getIndices(), op, true);
  if (failed(e))
    return failure();
  emitter.ostream() << *e << " = " << emitter.expr(op.getValue()) << ";\n";
  return success();
}

/// Additions only: f32 whose old value is unused (the attention backward's
/// dQ accumulator), and i32 (its deterministic mode's counters, whose old
/// value a spin reads).
static LogicalResult printOperation(Emitter &emitter, memref::AtomicRMWOp op) {
  Type type = op.getValue().getType();
  bool f32Add = op.getKind() == arith::AtomicRMWKind::addf && type.isF32() &&
                op.getResult().use_empty();
  bool i32Add =
      op.getKind() == arith::AtomicRMWKind::addi && type.isInteger(32);
  if (!f32Add && !i32Add)
    return op.emitOpError("has no CUDA C form but an f32 add whose old value "
                          "is unused or an i32 add");
  FailureOr<std::string> e =
      printElement(emitter, op.getMemref(), op.getIndices(), op, true);
  if (failed(e))
    return failure();
  std::string call =
      "atomicAdd(&" + *e + ", " + emitter.expr(op.getValue()) + ")";
  if (!op.getResult().use_empty())
    return emitter.assign(op.getResult(), call, op);
  emitter.ostream() << call << ";\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, memref::ViewOp op) {
  if (!op.getSizes().empty())
    return op.emitOpError("with dynamic sizes has no CUDA C form");
  FailureOr<std::string> type = emitter.typeName(op.getType(), op);
  if (failed(type))
    return failure();
  std::string base = emitter.expr(op.getSource());
  std::optional<int64_t> shift = getConstantIntValue(op.getByteShift());
  if (shift != 0)
    base += " + " + emitter.expr(op.getByteShift());
  return emitter.assign(op, "(" + *type + ")(" + base + ")", op);
}

static LogicalResult printOperation(Emitter &emitter,
                                    memref::ExtractAlignedPointerAsIndexOp op) {
  // An index holds a shared-memory address, not a 64-bit pointer.
  if (!isShared(cast<MemRefType>(op.getSource().getType())))
    return op.emitOpError("of a buffer outside shared memory has "
                          "no CUDA C form");
  return emitter.assign(
      op, "(int)__cvta_generic_to_shared(" + emitter.expr(op.getSource()) + ")",
      op);
}

static LogicalResult printOperation(Emitter &emitter,
                                    gpu::DynamicSharedMemoryOp op) {
  emitter.require(Helper::SharedMemory);
  emitter.bind(op, "fusec_smem");
  return success();
}

//===----------------------------------------------------------------------===//
// vector
//===----------------------------------------------------------------------===//

/// The alignment LLVM gives a vector of `bytes` bytes: its size rounded to
/// a power of two; fusec_vec caps it at 16 (the widest access).
static uint64_t vecAlignment(uint64_t bytes) {
  uint64_t align = 1;
  while (align < 16 && bytes % (align * 2) == 0)
    align *= 2;
  return align;
}

/// A vector load (`stored` null) or store of `type` at `indices` in
/// `memref`.
static LogicalResult printVectorAccess(Emitter &emitter, Operation *op,
                                       Value memref, ValueRange indices,
                                       VectorType type,
                                       std::optional<uint64_t> alignment,
                                       Value stored) {
  if (type.getRank() != 1)
    return op->emitOpError("of a vector of rank ")
           << type.getRank() << " has no CUDA C form";
  FailureOr<std::string> vecType = emitter.typeName(type, op);
  FailureOr<std::string> pointer =
      printElement(emitter, memref, indices, op, false);
  if (failed(vecType) || failed(pointer))
    return failure();
  raw_indented_ostream &os = emitter.ostream();
  int64_t n = type.getNumElements();
  uint64_t bytes = n * type.getElementTypeBitWidth() / 8;
  // Without an alignment the access is only element-aligned.
  uint64_t elementBytes = type.getElementTypeBitWidth() / 8;
  if (alignment.value_or(elementBytes) >= vecAlignment(bytes)) {
    std::string access = "*(" + std::string(stored ? "" : "const ") + *vecType +
                         "*)(" + *pointer + ")";
    if (stored) {
      os << access << " = " << emitter.expr(stored) << ";\n";
      return success();
    }
    return emitter.assign(op->getResult(0), access, op);
  }
  FailureOr<std::string> base =
      printElement(emitter, memref, indices, op, true);
  std::string first = base->substr(0, base->size() - 1);
  if (stored) {
    for (int64_t i = 0; i < n; ++i)
      os << first << " + " << i << "] = " << emitter.expr(stored) << ".v[" << i
         << "];\n";
    return success();
  }
  SmallVector<std::string> elements;
  for (int64_t i = 0; i < n; ++i)
    elements.push_back(first + " + " + std::to_string(i) + "]");
  return emitter.assign(op->getResult(0),
                        "{{" + llvm::join(elements, ", ") + "}}", op);
}

static LogicalResult printOperation(Emitter &emitter, vector::LoadOp op) {
  return printVectorAccess(emitter, op, op.getBase(), op.getIndices(),
                           op.getVectorType(), op.getAlignment(), nullptr);
}

static LogicalResult printOperation(Emitter &emitter, vector::StoreOp op) {
  return printVectorAccess(emitter, op, op.getBase(), op.getIndices(),
                           op.getVectorType(), op.getAlignment(),
                           op.getValueToStore());
}

/// The element of vector `e` at `position`.
static std::string vectorElement(Emitter &emitter, std::string e,
                                 ArrayRef<OpFoldResult> position) {
  for (OpFoldResult index : position) {
    if (auto attr = dyn_cast<Attribute>(index))
      e += ".v[" + std::to_string(cast<IntegerAttr>(attr).getInt()) + "]";
    else
      e += ".v[" + emitter.expr(cast<Value>(index)) + "]";
  }
  return e;
}

static LogicalResult printOperation(Emitter &emitter, vector::ExtractOp op) {
  return emitter.assign(op,
                        vectorElement(emitter, emitter.expr(op.getSource()),
                                      op.getMixedPosition()),
                        op);
}

static LogicalResult printOperation(Emitter &emitter, vector::InsertOp op) {
  if (failed(emitter.assign(op, emitter.expr(op.getDest()), op)))
    return failure();
  emitter.ostream() << vectorElement(emitter, emitter.expr(op),
                                     op.getMixedPosition())
                    << " = " << emitter.expr(op.getValueToStore()) << ";\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    vector::FromElementsOp op) {
  if (op.getType().getRank() != 1)
    return op.emitOpError("of rank ")
           << op.getType().getRank() << " has no CUDA C form";
  SmallVector<std::string> elements;
  for (Value v : op.getElements())
    elements.push_back(emitter.expr(v));
  return emitter.assign(op, "{{" + llvm::join(elements, ", ") + "}}", op);
}

static LogicalResult printOperation(Emitter &emitter, vector::BroadcastOp op) {
  if (isa<VectorType>(op.getSourceType()) ||
      op.getResultVectorType().getRank() != 1)
    return op.emitOpError("of a vector has no CUDA C form");
  SmallVector<std::string> elements(op.getResultVectorType().getNumElements(),
                                    emitter.expr(op.getSource()));
  return emitter.assign(op, "{{" + llvm::join(elements, ", ") + "}}", op);
}

static LogicalResult printOperation(Emitter &emitter, vector::BitCastOp op) {
  FailureOr<std::string> type = emitter.typeName(op.getType(), op);
  if (failed(type))
    return failure();
  emitter.require(Helper::Bitcast);
  return emitter.assign(
      op, "fusec_bitcast<" + *type + ">(" + emitter.expr(op.getSource()) + ")",
      op);
}

//===----------------------------------------------------------------------===//
// LLVM structs
//===----------------------------------------------------------------------===//

/// The element of struct `e` at `position`.
static std::string structElement(std::string e, ArrayRef<int64_t> position) {
  for (int64_t i : position)
    e += ".v[" + std::to_string(i) + "]";
  return e;
}

static LogicalResult printOperation(Emitter &emitter, LLVM::ExtractValueOp op) {
  return emitter.assign(
      op, structElement(emitter.expr(op.getContainer()), op.getPosition()), op);
}

static LogicalResult printOperation(Emitter &emitter, LLVM::InsertValueOp op) {
  if (failed(emitter.assign(op, emitter.expr(op.getContainer()), op)))
    return failure();
  emitter.ostream() << structElement(emitter.expr(op), op.getPosition())
                    << " = " << emitter.expr(op.getValue()) << ";\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The area's dispatch
//===----------------------------------------------------------------------===//

std::optional<LogicalResult> fusec::cuda::printMemoryOp(Emitter &emitter,
                                                        Operation &op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(&op)
      .Case<memref::LoadOp, memref::StoreOp, memref::AtomicRMWOp,
            memref::ViewOp, memref::ExtractAlignedPointerAsIndexOp,
            gpu::DynamicSharedMemoryOp, vector::LoadOp, vector::StoreOp,
            vector::ExtractOp, vector::InsertOp, vector::FromElementsOp,
            vector::BroadcastOp, vector::BitCastOp, LLVM::ExtractValueOp,
            LLVM::InsertValueOp>(
          [&](auto op) -> LogicalResult { return printOperation(emitter, op); })
      .Default([](Operation *) { return std::nullopt; });
}
