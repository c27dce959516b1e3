//===- Wgmma.cpp - Hopper's warpgroup MMA, TMA and mbarriers --------------===//

#include "Wgmma.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;
using namespace fusec::tiling::wgmma;

/// The suspend-time hint of mbarrier.try_wait, in nanoseconds.
static constexpr int64_t kWaitTicks = 10000000;

static Value i64(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, b.getI64Type(), v);
}

static Value i32(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, b.getI32Type(), v);
}

Value wgmma::sharedAddress(ImplicitLocOpBuilder &b, Value view) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, view);
  return arith::IndexCastUIOp::create(b, b.getI64Type(), index);
}

Value wgmma::sharedPointer(ImplicitLocOpBuilder &b, Value address,
                           unsigned space) {
  return LLVM::IntToPtrOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), space), address);
}

Value wgmma::offset(ImplicitLocOpBuilder &b, Value address, int64_t bytes) {
  return bytes ? arith::AddIOp::create(b, address, i64(b, bytes)).getResult()
               : address;
}

Value wgmma::offset(ImplicitLocOpBuilder &b, Value address, Value index,
                    int64_t bytesPerIndex) {
  Value i = arith::IndexCastUIOp::create(b, b.getI64Type(), index);
  return arith::AddIOp::create(
      b, address, arith::MulIOp::create(b, i, i64(b, bytesPerIndex)));
}

Value wgmma::descriptor(ImplicitLocOpBuilder &b, Value address, bool kMajor,
                        int64_t panelBytes) {
  // address >> 4 in bits 0-13, the leading byte offset >> 4 in 16-29 (the
  // panel stride of an MN-major tile; unused by K-major 128-byte-swizzled
  // ones), the stride byte offset >> 4 in 32-45 (1024: 8 rows of 128
  // bytes), the 128-byte swizzle in 62-63.
  int64_t lbo = kMajor ? 1 : panelBytes >> 4, sbo = 1024 >> 4;
  int64_t high = (int64_t(1) << 62) | (sbo << 32) | (lbo << 16);
  Value field = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, address, i64(b, 4)), i64(b, 0x3FFF));
  return arith::OrIOp::create(b, field, i64(b, high));
}

static NVVM::WGMMATypes wgmmaTypeOf(Type type) {
  return type.isF16() ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16;
}

Value wgmma::mmaSS(ImplicitLocOpBuilder &b, Value acc, Value descA,
                   Value descB, int64_t n, Type type, bool aKMajor,
                   bool bKMajor) {
  NVVM::WGMMATypes t = wgmmaTypeOf(type);
  return NVVM::WgmmaMmaAsyncOp::create(
      b, acc.getType(), acc, descA, descB,
      NVVM::MMAShapeAttr::get(b.getContext(), 64, n, 16), t, t,
      NVVM::WGMMATypes::f32, NVVM::WGMMAScaleOut::one,
      NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
      aKMajor ? NVVM::MMALayout::row : NVVM::MMALayout::col,
      bKMajor ? NVVM::MMALayout::col : NVVM::MMALayout::row, nullptr);
}

Value wgmma::mmaRS(ImplicitLocOpBuilder &b, Value acc, ArrayRef<Value> a,
                   Value descB, int64_t n, Type type, bool bKMajor) {
  // wgmma.mma_async ... d, {a0..a3}, b-desc, scale-d, scale-a, scale-b,
  // trans-b: the accumulators tied in and out (operands $0.. out, then the
  // same count in), as nvvm.wgmma.mma_async's own lowering writes them.
  int64_t count = n / 2;
  std::string d, constraints;
  for (int64_t i = 0; i < count; ++i) {
    d += (i ? ", $" : "$") + std::to_string(i);
    constraints += "=f,";
  }
  for (int64_t i = 0; i < count; ++i)
    constraints += std::to_string(i) + ",";
  constraints += "r,r,r,r,l";
  auto reg = [](int64_t i) { return "$" + std::to_string(i); };
  std::string kind = type.isF16() ? "f16" : "bf16";
  std::string ptx =
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\nwgmma.mma_async.sync.aligned.m64n" +
      std::to_string(n) + "k16.f32." + kind + "." + kind + " {" + d + "}, {" +
      reg(2 * count) + ", " + reg(2 * count + 1) + ", " + reg(2 * count + 2) +
      ", " + reg(2 * count + 3) + "}, " + reg(2 * count + 4) + ", p, 1, 1, " +
      (bKMajor ? "0" : "1") + ";\n}\n";
  SmallVector<Value> operands = accumulatorValues(b, acc);
  llvm::append_range(operands, a);
  operands.push_back(descB);
  auto asmOp = LLVM::InlineAsmOp::create(
      b, acc.getType(), operands, ptx, constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None,
      LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
      /*operand_attrs=*/ArrayAttr());
  return asmOp.getResult(0);
}

Value wgmma::zeroAccumulators(ImplicitLocOpBuilder &b, int64_t n) {
  return LLVM::ZeroOp::create(
      b, LLVM::LLVMStructType::getLiteral(
             b.getContext(), SmallVector<Type>(n / 2, b.getF32Type())));
}

SmallVector<Value> wgmma::accumulatorValues(ImplicitLocOpBuilder &b,
                                            Value acc) {
  auto type = cast<LLVM::LLVMStructType>(acc.getType());
  SmallVector<Value> values;
  for (int64_t i = 0, e = type.getBody().size(); i < e; ++i)
    values.push_back(LLVM::ExtractValueOp::create(b, acc, i));
  return values;
}

Value wgmma::accumulatorStruct(ImplicitLocOpBuilder &b,
                               ArrayRef<Value> values) {
  Value acc = LLVM::UndefOp::create(
      b, LLVM::LLVMStructType::getLiteral(
             b.getContext(), SmallVector<Type>(values.size(), b.getF32Type())));
  for (auto [i, v] : llvm::enumerate(values))
    acc = LLVM::InsertValueOp::create(b, acc, v, i);
  return acc;
}

void wgmma::namedBarrier(ImplicitLocOpBuilder &b, int64_t id,
                         int64_t threads) {
  NVVM::BarrierOp::create(b, Type(), i32(b, id), i32(b, threads), nullptr,
                          Value());
}

void wgmma::waitBarrier(ImplicitLocOpBuilder &b, Value bar, Value parity) {
  NVVM::MBarrierTryWaitParityOp::create(b, bar, parity, i32(b, kWaitTicks));
}

void wgmma::copyBox(ImplicitLocOpBuilder &b, Value dst, Value map,
                    ValueRange coords, Value bar, ValueRange im2colOffsets) {
  Value dst7 = LLVM::AddrSpaceCastOp::create(
      b, LLVM::LLVMPointerType::get(b.getContext(), 7),
      sharedPointer(b, dst, 3));
  NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
      b, dst7, map, coords, bar, im2colOffsets, Value(), Value(),
      im2colOffsets.empty() ? NVVM::TMALoadMode::TILE
                            : NVVM::TMALoadMode::IM2COL,
      false, nullptr, Value());
}
