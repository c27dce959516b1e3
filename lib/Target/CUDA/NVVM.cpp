//===- NVVM.cpp - Tensor cores, copies and barriers as CUDA C -------------===//
//
// gpu's thread ids, barriers and shuffles as CUDA's builtins; nvvm and nvgpu
// ops (tensor cores, asynchronous and TMA copies, mbarriers, named barriers)
// and LLVM inline asm as `asm` statements holding the PTX the NVVM lowering
// emits for them. Shared-memory pointers are 32-bit shared addresses, as
// inline PTX takes them.
//
//===----------------------------------------------------------------------===//

#include "CUDAEmitter.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace fusec::cuda;

//===----------------------------------------------------------------------===//
// gpu
//===----------------------------------------------------------------------===//

/// threadIdx.x and the like.
static LogicalResult printIndexBuiltin(Emitter &emitter, Operation *op) {
  std::pair<StringRef, gpu::Dimension> builtin =
      llvm::TypeSwitch<Operation *, std::pair<StringRef, gpu::Dimension>>(op)
          .Case([](gpu::ThreadIdOp id) {
            return std::make_pair("threadIdx", id.getDimension());
          })
          .Case([](gpu::BlockIdOp id) {
            return std::make_pair("blockIdx", id.getDimension());
          })
          .Case([](gpu::BlockDimOp dim) {
            return std::make_pair("blockDim", dim.getDimension());
          })
          .Case([](gpu::GridDimOp dim) {
            return std::make_pair("gridDim", dim.getDimension());
          });
  return emitter.assign(
      op->getResult(0),
      (builtin.first + "." + gpu::stringifyDimension(builtin.second)).str(),
      op);
}

static LogicalResult printOperation(Emitter &emitter, gpu::BarrierOp op) {
  emitter.ostream() << "__syncthreads();\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, gpu::ShuffleOp op) {
  // CUDA's segmented width and MLIR's clamp agree for whole warps.
  std::optional<int64_t> width = getConstantIntValue(op.getWidth());
  if (width != 32 || !op.getValid().use_empty())
    return op.emitOpError("over other than a whole warp, or whose "
                          "validity is used, has no CUDA C form");
  StringRef name;
  switch (op.getMode()) {
  case gpu::ShuffleMode::XOR:
    name = "__shfl_xor_sync";
    break;
  case gpu::ShuffleMode::DOWN:
    name = "__shfl_down_sync";
    break;
  case gpu::ShuffleMode::UP:
    name = "__shfl_up_sync";
    break;
  case gpu::ShuffleMode::IDX:
    name = "__shfl_sync";
    break;
  }
  return emitter.assign(op.getShuffleResult(),
                        (name + "(0xffffffff, " + emitter.expr(op.getValue()) +
                         ", " + emitter.expr(op.getOffset()) + ", 32)")
                            .str(),
                        op);
}

//===----------------------------------------------------------------------===//
// LLVM pointers
//===----------------------------------------------------------------------===//

static LogicalResult printOperation(Emitter &emitter, LLVM::IntToPtrOp op) {
  FailureOr<std::string> type = emitter.typeName(op.getType(), op);
  if (failed(type))
    return failure();
  return emitter.assign(op, "(" + *type + ")" + emitter.expr(op.getArg()), op);
}

static LogicalResult printOperation(Emitter &emitter,
                                    LLVM::AddrSpaceCastOp op) {
  // A shared::cta address is the same shared::cluster address.
  MLIRContext *context = op.getContext();
  if (op.getArg().getType() !=
          LLVM::LLVMPointerType::get(
              context, static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared)) ||
      op.getType() != LLVM::LLVMPointerType::get(
                          context, static_cast<unsigned>(
                                       NVVM::NVVMMemorySpace::SharedCluster)))
    return op.emitOpError("other than shared::cta to shared::cluster "
                          "has no CUDA C form");
  emitter.bind(op, emitter.expr(op.getArg()));
  return success();
}

//===----------------------------------------------------------------------===//
// Instructions without operands
//===----------------------------------------------------------------------===//

/// The PTX of an op with no operands or results.
static std::string plainPTX(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([](NVVM::CpAsyncCommitGroupOp) { return "cp.async.commit_group;"; })
      .Case([](NVVM::CpAsyncWaitGroupOp wait) {
        return "cp.async.wait_group " + std::to_string(wait.getN()) + ";";
      })
      .Case([](NVVM::FenceMbarrierInitOp) {
        return "fence.mbarrier_init.release.cluster;";
      })
      .Case([](NVVM::FenceProxyOp fence) -> std::string {
        // Only the fences the kernels emit: st.shared before wgmma reads,
        // and bulk reductions before a release.
        if (fence.getKind() == NVVM::ProxyKind::async_global)
          return "fence.proxy.async.global;";
        if (fence.getKind() != NVVM::ProxyKind::async_shared ||
            fence.getSpace() != NVVM::SharedSpace::shared_cta)
          return "";
        return "fence.proxy.async.shared::cta;";
      })
      .Case([](NVVM::MembarOp membar) -> std::string {
        switch (membar.getScope()) {
        case NVVM::MemScopeKind::CTA:
          return "membar.cta;";
        case NVVM::MemScopeKind::GPU:
          return "membar.gl;";
        case NVVM::MemScopeKind::SYS:
          return "membar.sys;";
        default:
          return "";
        }
      })
      .Case(
          [](NVVM::WgmmaFenceAlignedOp) { return "wgmma.fence.sync.aligned;"; })
      .Case([](NVVM::WgmmaGroupSyncAlignedOp) {
        return "wgmma.commit_group.sync.aligned;";
      })
      .Case([](NVVM::WgmmaWaitGroupSyncOp wait) {
        return "wgmma.wait_group.sync.aligned " +
               std::to_string(wait.getGroup()) + ";";
      })
      .Case([](NVVM::SetMaxRegisterOp set) {
        return llvm::formatv("setmaxnreg.{0}.sync.aligned.u32 {1};",
                             set.getAction() ==
                                     NVVM::SetMaxRegisterAction::increase
                                 ? "inc"
                                 : "dec",
                             set.getRegCount())
            .str();
      })
      .Case([](NVVM::CpAsyncBulkCommitGroupOp) {
        return "cp.async.bulk.commit_group;";
      })
      .Case([](NVVM::CpAsyncBulkWaitGroupOp wait) {
        return llvm::formatv("cp.async.bulk.wait_group{0} {1};",
                             wait.getRead() ? ".read" : "", wait.getGroup())
            .str();
      })
      .Case([](nvgpu::DeviceAsyncCreateGroupOp) {
        return "cp.async.commit_group;";
      })
      .Case([](nvgpu::DeviceAsyncWaitOp wait) {
        return "cp.async.wait_group " +
               std::to_string(wait.getNumGroups().value_or(0)) + ";";
      });
}

/// An instruction without operands: `asm volatile("ptx" ::: "memory");`.
static LogicalResult printPlainPTX(Emitter &emitter, Operation *op) {
  AsmStatement statement;
  statement.ptx = plainPTX(op);
  if (statement.ptx.empty())
    return op->emitOpError("has no CUDA C form");
  emitter.printAsm(statement);
  return success();
}

//===----------------------------------------------------------------------===//
// Inline asm, tensor cores and asynchronous copies
//===----------------------------------------------------------------------===//

/// `%first, ..., %(first + count - 1)` in braces: a PTX vector operand.
static std::string operandList(unsigned first, unsigned count) {
  SmallVector<std::string> names;
  for (unsigned i = 0; i < count; ++i)
    names.push_back("%" + std::to_string(first + i));
  return "{" + llvm::join(names, ", ") + "}";
}

/// The "r" operand of a shared-memory pointer (an mbarrier, a TMA
/// destination), failing for other address spaces.
static FailureOr<std::string> sharedPointer(Emitter &emitter, Value ptr,
                                            Operation *op) {
  auto type = dyn_cast<LLVM::LLVMPointerType>(ptr.getType());
  if (!type ||
      (type.getAddressSpace() !=
           static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) &&
       type.getAddressSpace() !=
           static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster)))
    return op->emitOpError("takes a pointer of type ")
           << ptr.getType()
           << "; the CUDA C printer knows shared-memory pointers only";
  return "\"r\"(" + emitter.expr(ptr) + ")";
}

static LogicalResult printOperation(Emitter &emitter, LLVM::InlineAsmOp op) {
  if (op.getAsmDialect() && *op.getAsmDialect() != LLVM::AsmDialect::AD_ATT)
    return op.emitOpError("in Intel syntax has no CUDA C form");
  // LLVM numbers outputs, then every input; GCC (and CUDA) number outputs,
  // then the inputs not tied to an output ("+" outputs stand for both).
  SmallVector<StringRef> constraints;
  op.getConstraints().split(constraints, ',');
  SmallVector<StringRef> outputConstraints;
  SmallVector<std::pair<StringRef, Value>> inputs;
  DenseMap<unsigned, unsigned> tiedOutput, cudaNumber;
  bool memory = false;
  unsigned operand = 0, next = 0;
  for (StringRef c : constraints) {
    c = c.trim();
    if (c.consume_front("=")) {
      c.consume_front("&");
      cudaNumber[next++] = outputConstraints.size();
      outputConstraints.push_back(c);
      continue;
    }
    if (c.starts_with("~")) {
      memory |= c == "~{memory}";
      continue;
    }
    if (operand >= op.getOperands().size())
      return op.emitOpError("has more input constraints than operands");
    unsigned tied;
    if (!c.getAsInteger(10, tied)) {
      if (tied >= outputConstraints.size())
        return op.emitOpError("ties an input to output ")
               << tied << ", which does not exist";
      tiedOutput[tied] = operand;
      cudaNumber[next++] = tied;
    } else {
      inputs.push_back({c, op.getOperands()[operand]});
      next++;
    }
    ++operand;
  }
  unsigned numOutputs = outputConstraints.size();
  // Second pass: the untied inputs follow the outputs.
  unsigned untied = 0;
  next = numOutputs;
  for (StringRef c : ArrayRef(constraints)) {
    c = c.trim();
    if (c.starts_with("=") || c.starts_with("~"))
      continue;
    unsigned tied;
    if (c.getAsInteger(10, tied))
      cudaNumber[next] = numOutputs + untied++;
    ++next;
  }

  AsmStatement statement;
  statement.sideEffects = op.getHasSideEffects() || memory;
  // $N -> %N (renumbered), $$ -> $, % -> %%.
  StringRef text = op.getAsmString();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      statement.ptx += "%%";
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      statement.ptx += '$';
      ++i;
    } else if (c == '$' && i + 1 < text.size() && llvm::isDigit(text[i + 1])) {
      size_t end = i + 1;
      while (end < text.size() && llvm::isDigit(text[end]))
        ++end;
      unsigned number = 0;
      text.slice(i + 1, end).getAsInteger(10, number);
      if (!cudaNumber.count(number))
        return op.emitOpError("refers to operand $")
               << number << ", which it does not have";
      statement.ptx += "%" + std::to_string(cudaNumber[number]);
      i = end - 1;
    } else if (c == '$') {
      return op.emitOpError("uses an operand modifier the CUDA C printer "
                            "does not know");
    } else {
      statement.ptx += c;
    }
  }

  // Outputs: one result, or a struct of them.
  SmallVector<std::string> outputs;
  if (numOutputs) {
    if (op.getNumResults() != 1)
      return op.emitOpError("has outputs but no result");
    Value result = op.getResult(0);
    if (failed(emitter.declare(result, op)))
      return failure();
    bool isStruct = isa<LLVM::LLVMStructType>(result.getType());
    if (!isStruct && numOutputs != 1)
      return op.emitOpError("has ")
             << numOutputs << " outputs but a result of type "
             << result.getType();
    for (unsigned i = 0; i < numOutputs; ++i)
      outputs.push_back(isStruct ? emitter.expr(result) + ".v[" +
                                       std::to_string(i) + "]"
                                 : emitter.expr(result));
  }
  for (auto [i, c] : llvm::enumerate(outputConstraints)) {
    auto tied = tiedOutput.find(i);
    if (tied != tiedOutput.end()) {
      // A tied input is the output's value on entry.
      emitter.ostream() << outputs[i] << " = "
                        << emitter.expr(op.getOperands()[tied->second])
                        << ";\n";
      statement.outputs.push_back("\"+" + c.str() + "\"(" + outputs[i] + ")");
    } else {
      statement.outputs.push_back("\"=" + c.str() + "\"(" + outputs[i] + ")");
    }
  }
  for (auto [c, value] : inputs) {
    if (c == "n" && !getConstantIntValue(value))
      return op.emitOpError("has an immediate operand that is not a constant");
    statement.inputs.push_back("\"" + c.str() + "\"(" + emitter.expr(value) +
                               ")");
  }
  emitter.printAsm(statement);
  return success();
}

static LogicalResult printOperation(Emitter &emitter, nvgpu::LdMatrixOp op) {
  VectorType type = op.getRes().getType();
  unsigned tiles = op.getNumTiles();
  if (type.getRank() != 2 || type.getDimSize(0) != tiles ||
      type.getDimSize(1) * type.getElementTypeBitWidth() != 32)
    return op.emitOpError("with result type ") << type << " has no CUDA C form";
  FailureOr<std::string> address =
      printSharedAddress(emitter, op.getSrcMemref(), op.getIndices(), op);
  FailureOr<std::string> vecType = emitter.typeName(type, op);
  if (failed(address) || failed(vecType) ||
      failed(emitter.declare(op.getRes(), op)))
    return failure();
  // Each thread receives one 32-bit register per 8x8 tile.
  std::string regs = emitter.expr(op.getRes()) + "_regs";
  emitter.ostream() << "{\n";
  emitter.ostream().indent();
  emitter.require(Helper::Vec);
  emitter.require(Helper::Bitcast);
  emitter.ostream() << "fusec_vec<unsigned, " << tiles << "> " << regs << ";\n";
  AsmStatement statement;
  statement.ptx = llvm::formatv("ldmatrix.sync.aligned.m8n8.x{0}{1}.shared.b16 "
                                "{2}, [%{0}];",
                                tiles, op.getTranspose() ? ".trans" : "",
                                operandList(0, tiles))
                      .str();
  for (unsigned i = 0; i < tiles; ++i)
    statement.outputs.push_back("\"=r\"(" + regs + ".v[" + std::to_string(i) +
                                "])");
  statement.inputs.push_back("\"r\"(" + *address + ")");
  emitter.printAsm(statement);
  emitter.ostream() << emitter.expr(op.getRes()) << " = fusec_bitcast<"
                    << *vecType << ">(" << regs << ");\n";
  emitter.ostream().unindent();
  emitter.ostream() << "}\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    nvgpu::DeviceAsyncCopyOp op) {
  MemRefType dstType = op.getDst().getType();
  unsigned elementBits = dstType.getElementTypeBitWidth();
  uint64_t bytes = op.getDstElements().getZExtValue() * elementBits / 8;
  if (bytes != 4 && bytes != 8 && bytes != 16)
    return op.emitOpError("copies ") << bytes
                                     << " bytes; cp.async copies 4, "
                                        "8 or 16";
  bool bypassL1 = op.getBypassL1().has_value();
  if (bypassL1 && bytes != 16)
    return op.emitOpError("bypasses L1 for a copy of ")
           << bytes << " bytes; cp.async.cg copies 16";
  FailureOr<std::string> dst =
      printSharedAddress(emitter, op.getDst(), op.getDstIndices(), op);
  FailureOr<std::string> src =
      printElement(emitter, op.getSrc(), op.getSrcIndices(), op, false);
  if (failed(dst) || failed(src))
    return failure();
  AsmStatement statement;
  statement.ptx = llvm::formatv("cp.async.{0}.shared.global [%0], [%1], {1}",
                                bypassL1 ? "cg" : "ca", bytes)
                      .str();
  statement.inputs = {"\"r\"(" + *dst + ")",
                      "\"l\"(__cvta_generic_to_global(" + *src + "))"};
  if (Value srcElements = op.getSrcElements()) {
    // Bytes past the source's count are zero-filled.
    statement.ptx += ", %2";
    std::string count = emitter.expr(srcElements);
    if (elementBits != 8)
      count += " * " + std::to_string(elementBits / 8);
    // A 32-bit register, whatever the width of index (at most 16 bytes).
    statement.inputs.push_back("\"r\"((unsigned)(" + count + "))");
  }
  statement.ptx += ";";
  emitter.printAsm(statement);
  // The token stays undefined: fusec orders copies with commit/wait groups,
  // and nothing else may use it.
  return success();
}

/// The PTX name of an MMA operand type.
static std::string mmaTypeName(std::optional<NVVM::MMATypes> ptxType,
                               Type type) {
  if (ptxType)
    return NVVM::stringifyMMATypes(*ptxType).str();
  type = getElementTypeOrSelf(type);
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF32())
    return "f32";
  return "";
}

static LogicalResult printOperation(Emitter &emitter, NVVM::MmaOp op) {
  auto resultType = dyn_cast<LLVM::LLVMStructType>(op.getRes().getType());
  if (!resultType ||
      !llvm::all_of(resultType.getBody(), [](Type t) { return t.isF32(); }) ||
      !llvm::all_of(op.getOperandC().getTypes(),
                    [](Type t) { return t.isF32(); }))
    return op.emitOpError("with other than f32 accumulators has no CUDA C "
                          "form");
  std::string aType =
      mmaTypeName(op.getMultiplicandAPtxType(), op.getOperandA()[0].getType());
  std::string bType =
      mmaTypeName(op.getMultiplicandBPtxType(), op.getOperandB()[0].getType());
  if (aType.empty() || bType.empty() || op.getIntOverflowBehavior())
    return op.emitOpError("with these operand types has no CUDA C form");
  unsigned numD = resultType.getBody().size();
  unsigned numA = op.getOperandA().size(), numB = op.getOperandB().size();
  unsigned numC = op.getOperandC().size();
  NVVM::MMAShapeAttr shape = op.getShape();
  AsmStatement statement;
  statement.sideEffects = false;
  statement.ptx =
      llvm::formatv("mma.sync.aligned.m{0}n{1}k{2}.{3}.{4}.f32.{5}.{6}.f32 "
                    "{7}, {8}, {9}, {10};",
                    shape.getM(), shape.getN(), shape.getK(),
                    NVVM::stringifyMMALayout(op.getLayoutA()),
                    NVVM::stringifyMMALayout(op.getLayoutB()), aType, bType,
                    operandList(0, numD), operandList(numD, numA),
                    operandList(numD + numA, numB),
                    operandList(numD + numA + numB, numC))
          .str();
  if (failed(emitter.declare(op.getRes(), op)))
    return failure();
  for (unsigned i = 0; i < numD; ++i)
    statement.outputs.push_back("\"=f\"(" + emitter.expr(op.getRes()) + ".v[" +
                                std::to_string(i) + "])");
  // A and B fragments are 32-bit registers: pairs of halves travel as one.
  for (Value v : llvm::concat<Value>(op.getOperandA(), op.getOperandB())) {
    if (isa<VectorType>(v.getType())) {
      emitter.require(Helper::Bitcast);
      statement.inputs.push_back("\"r\"(fusec_bitcast<unsigned>(" +
                                 emitter.expr(v) + "))");
    } else {
      statement.inputs.push_back("\"r\"(" + emitter.expr(v) + ")");
    }
  }
  for (Value v : op.getOperandC())
    statement.inputs.push_back("\"f\"(" + emitter.expr(v) + ")");
  emitter.printAsm(statement);
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    NVVM::WgmmaMmaAsyncOp op) {
  auto resultType = dyn_cast<LLVM::LLVMStructType>(op.getResults().getType());
  if (op.getTypeD() != NVVM::WGMMATypes::f32 || !resultType)
    return op.emitOpError("with other than f32 accumulators has no CUDA C "
                          "form");
  NVVM::WGMMATypes a = op.getTypeA(), b = op.getTypeB();
  bool halves = a == NVVM::WGMMATypes::f16 || a == NVVM::WGMMATypes::bf16;
  bool floats = halves || a == NVVM::WGMMATypes::tf32 ||
                a == NVVM::WGMMATypes::e4m3 || a == NVVM::WGMMATypes::e5m2;
  if (!floats)
    return op.emitOpError("on integers has no CUDA C form");
  unsigned numD = resultType.getBody().size();
  NVVM::MMAShapeAttr shape = op.getShape();
  auto scale = [](NVVM::WGMMAScaleIn s) {
    return s == NVVM::WGMMAScaleIn::one ? "1" : "-1";
  };
  // As NVVM lowers it: the accumulators read and written in place, scale-d
  // as a predicate, the rest immediates; only 16-bit types transpose.
  std::string immediates =
      llvm::formatv("{0}, {1}", scale(op.getScaleA()), scale(op.getScaleB()));
  if (halves)
    immediates += llvm::formatv(
        ", {0}, {1}", op.getLayoutA() == NVVM::MMALayout::row ? 0 : 1,
        op.getLayoutB() == NVVM::MMALayout::col ? 0 : 1);
  AsmStatement statement;
  statement.ptx =
      llvm::formatv("{\n.reg .pred p;\nsetp.ne.b32 p, {0}, 0;\n"
                    "wgmma.mma_async.sync.aligned.m{1}n{2}k{3}.f32.{4}.{5} "
                    "{6}, %{7}, %{8}, p, {9};\n}",
                    op.getScaleD() == NVVM::WGMMAScaleOut::one ? 1 : 0,
                    shape.getM(), shape.getN(), shape.getK(),
                    NVVM::stringifyWGMMATypes(a), NVVM::stringifyWGMMATypes(b),
                    operandList(0, numD), numD, numD + 1, immediates)
          .str();
  if (failed(emitter.assign(op.getResults(), emitter.expr(op.getInouts()), op)))
    return failure();
  for (unsigned i = 0; i < numD; ++i)
    statement.outputs.push_back("\"+f\"(" + emitter.expr(op.getResults()) +
                                ".v[" + std::to_string(i) + "])");
  statement.inputs = {"\"l\"(" + emitter.expr(op.getDescriptorA()) + ")",
                      "\"l\"(" + emitter.expr(op.getDescriptorB()) + ")"};
  emitter.printAsm(statement);
  return success();
}

static LogicalResult
printOperation(Emitter &emitter,
               NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp op) {
  if (op.getMulticastMask() || op.getL2CacheHint() || op.getPredicate() ||
      op.getGroup() || op.getIsCTAOnly())
    return op.emitOpError("with multicast, cache hints, a predicate or a CTA "
                          "group has no CUDA C form");
  bool im2col = op.getMode() == NVVM::TMALoadMode::IM2COL;
  if (!im2col && op.getMode() != NVVM::TMALoadMode::TILE)
    return op.emitOpError("in mode ")
           << NVVM::stringifyTMALoadMode(op.getMode()) << " has no CUDA C form";
  FailureOr<std::string> dst = sharedPointer(emitter, op.getDstMem(), op);
  FailureOr<std::string> mbar = sharedPointer(emitter, op.getMbar(), op);
  if (failed(dst) || failed(mbar))
    return failure();
  unsigned dims = op.getCoordinates().size();
  unsigned offsets = op.getIm2colOffsets().size();
  AsmStatement statement;
  statement.ptx =
      llvm::formatv("cp.async.bulk.tensor.{0}d.shared::cluster.global.{1}."
                    "mbarrier::complete_tx::bytes [%0], [%1, {2}], [%2]",
                    dims, im2col ? "im2col" : "tile", operandList(3, dims))
          .str();
  if (im2col)
    statement.ptx += ", " + operandList(3 + dims, offsets);
  statement.ptx += ";";
  statement.inputs = {*dst,
                      "\"l\"((unsigned long long)" +
                          emitter.expr(op.getTmaDescriptor()) + ")",
                      *mbar};
  for (Value c : op.getCoordinates())
    statement.inputs.push_back("\"r\"(" + emitter.expr(c) + ")");
  for (Value o : op.getIm2colOffsets())
    statement.inputs.push_back("\"h\"(" + emitter.expr(o) + ")");
  emitter.printAsm(statement);
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    NVVM::CpAsyncBulkTensorReduceOp op) {
  if (op.getL2CacheHint() || op.getRedKind() != NVVM::TMAReduxKind::ADD ||
      op.getMode() != NVVM::TMAStoreMode::TILE)
    return op.emitOpError("other than an add of a tile without cache hints "
                          "has no CUDA C form");
  FailureOr<std::string> src = sharedPointer(emitter, op.getSrcMem(), op);
  if (failed(src))
    return failure();
  unsigned dims = op.getCoordinates().size();
  AsmStatement statement;
  statement.ptx = llvm::formatv("cp.reduce.async.bulk.tensor.{0}d.global."
                                "shared::cta.add.tile.bulk_group [%0, {1}], "
                                "[%1];",
                                dims, operandList(2, dims))
                      .str();
  statement.inputs = {"\"l\"((unsigned long long)" +
                          emitter.expr(op.getTmaDescriptor()) + ")",
                      *src};
  for (Value c : op.getCoordinates())
    statement.inputs.push_back("\"r\"(" + emitter.expr(c) + ")");
  emitter.printAsm(statement);
  return success();
}

//===----------------------------------------------------------------------===//
// mbarriers and named barriers
//===----------------------------------------------------------------------===//

static LogicalResult printOperation(Emitter &emitter, NVVM::MBarrierInitOp op) {
  if (op.getPredicate())
    return op.emitOpError("with a predicate has no CUDA C form");
  FailureOr<std::string> addr = sharedPointer(emitter, op.getAddr(), op);
  if (failed(addr))
    return failure();
  emitter.printAsm({"mbarrier.init.shared.b64 [%0], %1;",
                    {},
                    {*addr, "\"r\"(" + emitter.expr(op.getCount()) + ")"}});
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    NVVM::MBarrierArriveOp op) {
  FailureOr<std::string> addr = sharedPointer(emitter, op.getAddr(), op);
  if (failed(addr))
    return failure();
  if (op.getScope() != NVVM::MemScopeKind::CTA || op.getRelaxed())
    return op.emitOpError("other than release.cta has no CUDA C "
                          "form");
  AsmStatement statement;
  std::string count = op.getCount() ? std::string(", %2") : std::string();
  if (Value res = op.getRes()) {
    if (failed(emitter.declare(res, op)))
      return failure();
    statement.ptx = "mbarrier.arrive.shared.b64 %0, [%1]" + count + ";";
    statement.outputs.push_back("\"=l\"(" + emitter.expr(res) + ")");
  } else {
    if (!count.empty())
      count = ", %1";
    statement.ptx = "{\n.reg .b64 state;\nmbarrier.arrive.shared.b64 "
                    "state, [%0]" +
                    count + ";\n}";
  }
  statement.inputs.push_back(*addr);
  if (Value c = op.getCount())
    statement.inputs.push_back("\"r\"(" + emitter.expr(c) + ")");
  emitter.printAsm(statement);
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    NVVM::MBarrierArriveExpectTxOp op) {
  FailureOr<std::string> addr = sharedPointer(emitter, op.getAddr(), op);
  if (failed(addr))
    return failure();
  if (op.getScope() != NVVM::MemScopeKind::CTA || op.getRelaxed() ||
      op.getPredicate() || op.getRes())
    return op.emitOpError("other than release.cta without a "
                          "predicate or result has no CUDA C form");
  emitter.printAsm({"{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared.b64 "
                    "state, [%0], %1;\n}",
                    {},
                    {*addr, "\"r\"(" + emitter.expr(op.getTxcount()) + ")"}});
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    NVVM::MBarrierTryWaitParityOp op) {
  // Retries until the phase completes, as the NVVM lowering does.
  FailureOr<std::string> addr = sharedPointer(emitter, op.getAddr(), op);
  if (failed(addr))
    return failure();
  emitter.printAsm({"{\n.reg .pred P1;\nLAB_WAIT:\n"
                    "mbarrier.try_wait.parity.shared.b64 P1, [%0], %1, %2;\n"
                    "@P1 bra.uni DONE;\nbra.uni LAB_WAIT;\nDONE:\n}",
                    {},
                    {*addr, "\"r\"(" + emitter.expr(op.getPhase()) + ")",
                     "\"r\"(" + emitter.expr(op.getTicks()) + ")"}});
  return success();
}

static LogicalResult printOperation(Emitter &emitter, NVVM::SyncWarpOp op) {
  emitter.ostream() << "__syncwarp(" << emitter.expr(op.getMask()) << ");\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, NVVM::BarrierOp op) {
  if (op.getReductionOp() || op.getRes())
    return op.emitOpError("with a reduction has no CUDA C form");
  Value id = op.getBarrierId();
  Value count = op.getNumberOfThreads();
  if (!id && !count) {
    emitter.ostream() << "__syncthreads();\n";
    return success();
  }
  AsmStatement statement;
  statement.inputs.push_back("\"r\"(" + (id ? emitter.expr(id) : "0") + ")");
  statement.ptx = "bar.sync %0";
  if (count) {
    statement.ptx += ", %1";
    statement.inputs.push_back("\"r\"(" + emitter.expr(count) + ")");
  }
  statement.ptx += ";";
  emitter.printAsm(statement);
  return success();
}

static LogicalResult printOperation(Emitter &emitter,
                                    NVVM::BarrierArriveOp op) {
  Value id = op.getBarrierId();
  emitter.printAsm({"bar.arrive %0, %1;",
                    {},
                    {"\"r\"(" + (id ? emitter.expr(id) : "0") + ")",
                     "\"r\"(" + emitter.expr(op.getNumberOfThreads()) + ")"}});
  return success();
}

//===----------------------------------------------------------------------===//
// The area's dispatch
//===----------------------------------------------------------------------===//

std::optional<LogicalResult> fusec::cuda::printNVVMOp(Emitter &emitter,
                                                      Operation &op) {
  auto print = [&](auto op) -> LogicalResult {
    return printOperation(emitter, op);
  };
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(&op)
      .Case<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp>(
          printFamily(emitter, printIndexBuiltin))
      .Case<gpu::BarrierOp, gpu::ShuffleOp, LLVM::IntToPtrOp,
            LLVM::AddrSpaceCastOp, LLVM::InlineAsmOp, nvgpu::LdMatrixOp,
            nvgpu::DeviceAsyncCopyOp, NVVM::MmaOp, NVVM::WgmmaMmaAsyncOp,
            NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp,
            NVVM::CpAsyncBulkTensorReduceOp, NVVM::MBarrierInitOp,
            NVVM::MBarrierArriveOp, NVVM::MBarrierArriveExpectTxOp,
            NVVM::MBarrierTryWaitParityOp, NVVM::BarrierOp,
            NVVM::BarrierArriveOp, NVVM::SyncWarpOp>(print)
      .Case<NVVM::CpAsyncCommitGroupOp, NVVM::CpAsyncWaitGroupOp,
            NVVM::FenceMbarrierInitOp, NVVM::FenceProxyOp, NVVM::MembarOp,
            NVVM::CpAsyncBulkCommitGroupOp, NVVM::CpAsyncBulkWaitGroupOp,
            NVVM::WgmmaFenceAlignedOp, NVVM::WgmmaGroupSyncAlignedOp,
            NVVM::WgmmaWaitGroupSyncOp, NVVM::SetMaxRegisterOp,
            nvgpu::DeviceAsyncCreateGroupOp, nvgpu::DeviceAsyncWaitOp>(
          printFamily(emitter, printPlainPTX))
      .Default([](Operation *) { return std::nullopt; });
}
