//===- AttentionWgmma.cpp - FlashAttention on Hopper's warpgroup MMA ------===//
//
// fuse.attention in one kernel on sm_90a, in FlashAttention-3's structure:
//
//  - a producer warpgroup, one thread of which issues TMA copies: the
//    block's 128 query rows once, then K and V tiles of `bc` keys through
//    two shared-memory stages (128-byte swizzled, in panels of 64 head
//    dims), each completing on its own mbarrier so that S = Q K^T starts
//    before V has landed;
//  - two consumer warpgroups, 64 query rows each: S = Q K^T by wgmma from
//    shared memory (m64 x bc, k over the head dim), the online softmax on
//    the accumulators in registers (their layout is mma.sync's, so the
//    softmax, the masks and the epilogue are AttentionMmaSync's), and
//    O += P V by wgmma with P, rounded to the input type, taken from
//    registers and V read MN-major; a consumer releases the stage once its
//    P V completed;
//  - registers move from the producer to the consumers (setmaxnreg).
//
// Q, K and V are read through TMA tensor maps over the kernel arguments
// under their transposes and slices (strides, an offset), so heads split
// out of a fused projection need no copy; a rope keeps the mma.sync kernel,
// which rotates tiles in shared memory. Edges are TMA's zero fill, masked.
//
//===----------------------------------------------------------------------===//

#include "Families.h"
#include "MmaSync.h"
#include "Wgmma.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {

struct AttentionShape {
  int64_t batch, hq, hkv, nq, nk, d, dv;
};

AttentionShape shapeOfAttention(AttentionOp op) {
  ArrayRef<int64_t> q = shapeOf(op.getQuery()), v = shapeOf(op.getValue());
  return {q[0], q[1], v[1], q[2], v[2], q[3], v[3]};
}

/// An attention operand [B, H, N, D] as strides over a kernel argument.
struct StridedView {
  unsigned param = 0;
  /// Elements from the argument's start to the operand's first element,
  /// and per operand axis.
  int64_t offset = 0;
  SmallVector<int64_t> strides;
};

/// `v` seen through its transposes (that keep the innermost axis) and
/// slices down to a kernel argument, or nothing (a rope, say).
std::optional<StridedView> stridedView(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (!isa<KernelOp>(arg.getOwner()->getParentOp()))
      return std::nullopt;
    ArrayRef<int64_t> shape = shapeOf(v);
    StridedView view;
    view.param = arg.getArgNumber();
    view.strides.assign(shape.size(), 1);
    for (int64_t i = shape.size() - 2; i >= 0; --i)
      view.strides[i] = view.strides[i + 1] * shape[i + 1];
    return view;
  }
  if (auto transpose = v.getDefiningOp<TransposeOp>()) {
    std::optional<StridedView> in = stridedView(transpose.getInput());
    if (!in)
      return std::nullopt;
    StridedView view = *in;
    for (auto [i, p] : llvm::enumerate(transpose.getPermutation()))
      view.strides[i] = in->strides[p];
    return view;
  }
  if (auto slice = v.getDefiningOp<SliceOp>()) {
    std::optional<StridedView> view = stridedView(slice.getInput());
    if (!view)
      return std::nullopt;
    for (auto [o, s] : llvm::zip_equal(slice.getOffsets(), view->strides))
      view->offset += o * s;
    return view;
  }
  return std::nullopt;
}

/// Whether TMA can read `v`: its head dim contiguous, every other stride
/// and its offset 16-byte aligned.
std::optional<StridedView> tmaView(Value v) {
  std::optional<StridedView> view = stridedView(v);
  int64_t bytes = cast<ShapedType>(v.getType()).getElementTypeBitWidth() / 8;
  if (!view || view->strides.back() != 1 || view->offset * bytes % 16 ||
      !wgmma::tmaAddressable(cast<ShapedType>(v.getType()).getShape()))
    return std::nullopt;
  for (int64_t s : ArrayRef<int64_t>(view->strides).drop_back())
    if (s * bytes % 16)
      return std::nullopt;
  return view;
}

/// Head dims rounded up to whole 64-element panels.
int64_t panels(int64_t width) { return ceilDiv(width, 64); }

constexpr int64_t kRows = 128, kConsumers = 2;

/// Shared memory of the kernel: Q, two stages of K and V, the mbarriers.
int64_t sharedBytesOf(const AttentionShape &s, int64_t bc) {
  return kRows * panels(s.d) * 128 +
         2 * bc * (panels(s.d) + panels(s.dv)) * 128 + 7 * 8;
}

class AttentionWgmmaKernel : public KernelBuilder {
public:
  AttentionWgmmaKernel(KernelOp kernel, gpu::GPUModuleOp module,
                       const TargetDescription &target,
                       const AttentionTile &tile)
      : KernelBuilder(kernel, module, target), bc(tile.bc),
        pingPong(tile.pingPong) {}

private:
  FailureOr<LaunchConfig> emitBody() override;

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), v);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  }
  Value exp2(Value x) { return math::Exp2Op::create(b, x); }
  /// The sum (or max) of `x` over the 4 threads of a quad.
  Value quadReduce(Value x, bool max) {
    for (int32_t offset : {1, 2}) {
      Value other =
          gpu::ShuffleOp::create(b, x, offset, 32, gpu::ShuffleMode::XOR)
              .getShuffleResult();
      x = max ? maxf(x, other) : addf(x, other);
    }
    return x;
  }

  /// Registers per thread of the producer and of the consumers
  /// (setmaxnreg): 128 x (24 + 2 x 240) fits the SM's 64K.
  static constexpr int64_t kProducerRegisters = 24, kConsumerRegisters = 240;

  int64_t bc;
  bool pingPong;
};

} // namespace

//===----------------------------------------------------------------------===//
// Configuration
//===----------------------------------------------------------------------===//

bool fusec::tiling::isWgmmaAttention(AttentionOp op,
                                     const TargetDescription &target) {
  return target.tensorCores == fusec::TensorCores::Wgmma &&
         isMmaSyncAttention(op) && tmaView(op.getQuery()) &&
         tmaView(op.getKey()) && tmaView(op.getValue());
}

int64_t fusec::tiling::chooseWgmmaAttentionKeys(AttentionOp op) {
  // Registers hold a thread's share of the 64 x dv output and 64 x bc
  // scores: narrower key tiles for the widest heads (FlashAttention-3's
  // choice at 256).
  AttentionShape s = shapeOfAttention(op);
  return std::max(s.d, s.dv) > 128 ? 64 : 128;
}

bool fusec::tiling::suitsWgmmaAttention(AttentionOp op, TileAttr attr,
                                        const TargetDescription &target) {
  return attr.getBm() == kRows && (attr.getBn() == 64 || attr.getBn() == 128) &&
         attr.getBk() == 16 && !attr.getWarpsM() && attr.getWarpsN() <= 2 &&
         sharedBytesOf(shapeOfAttention(op), attr.getBn()) <=
             target.sharedBytesPerBlockOptIn;
}

std::unique_ptr<KernelBuilder>
fusec::tiling::makeAttentionWgmmaKernel(KernelOp kernel,
                                        gpu::GPUModuleOp module,
                                        const TargetDescription &target,
                                        const AttentionTile &tile) {
  return std::make_unique<AttentionWgmmaKernel>(kernel, module, target, tile);
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

FailureOr<LaunchConfig> AttentionWgmmaKernel::emitBody() {
  auto op = cast<AttentionOp>(anchor);
  AttentionShape s = shapeOfAttention(op);
  Type elementType = getElementTypeOrSelf(op.getQuery().getType());
  MmaType type = *mmaTypeOf(elementType, Fp32Math::IEEE);
  int64_t br = kRows, threads = 128 * (1 + kConsumers);
  int64_t group = s.hq / s.hkv;
  int64_t qSteps = ceilDiv(s.d, 16), sFrags = bc / 8, pSteps = bc / 16;
  int64_t vFrags = s.dv / 8;
  int64_t qTiles = ceilDiv(s.nq, br), kvTiles = ceilDiv(s.nk, bc);
  bool causal = op.getCausal();
  Value mask = op.getMask() ? argOf.lookup(op.getMask()) : Value();
  double log2e = 1.4426950408889634;
  double scaleLog2 = op.getEffectiveScale() * log2e;
  bool prescale = mask || scaleLog2 <= 0;
  Value mult = f32(prescale ? 1.0 : scaleLog2);
  Value negInf = f32(-INFINITY), zero = f32(0);

  // Tensor maps of Q, K and V: [D, N, H, B] over their arguments, boxes of
  // a 64-element panel of the head dim by the tile's rows.
  int64_t bytes = type.bytes;
  auto mapOf = [&](Value operand, int64_t rows) {
    StridedView view = *tmaView(operand);
    ArrayRef<int64_t> shape = shapeOf(operand);
    TensorMapParam map;
    map.memref = view.param;
    map.dims = {shape[3], shape[2], shape[1], shape[0]};
    map.strides = {view.strides[2] * bytes, view.strides[1] * bytes,
                   view.strides[0] * bytes};
    map.offset = view.offset * bytes;
    map.box = {64, rows, 1, 1};
    return addTensorMap(map);
  };
  Value qMap = mapOf(op.getQuery(), br);
  Value kMap = mapOf(op.getKey(), bc);
  Value vMap = mapOf(op.getValue(), bc);

  int64_t qBytes = br * panels(s.d) * 128;
  int64_t kBytes = bc * panels(s.d) * 128, vBytes = bc * panels(s.dv) * 128;
  Value qSmem = allocShared({qBytes}, b.getI8Type(), 1024);
  Value kSmem = allocShared({2 * kBytes}, b.getI8Type(), 1024);
  Value vSmem = allocShared({2 * vBytes}, b.getI8Type(), 1024);
  Value barrierSmem = allocShared({7}, b.getI64Type(), 8);
  Value qBase = wgmma::sharedAddress(b, qSmem);
  Value kBase = wgmma::sharedAddress(b, kSmem);
  Value vBase = wgmma::sharedAddress(b, vSmem);
  Value barriers = wgmma::sharedAddress(b, barrierSmem);
  // Barriers: Q, then K and V per stage, then the stages' releases.
  auto barrier = [&](int64_t i) {
    return wgmma::sharedPointer(b, wgmma::offset(b, barriers, 8 * i), 3);
  };
  auto barrierAt = [&](int64_t first, Value stage) {
    return wgmma::sharedPointer(
        b, wgmma::offset(b, wgmma::offset(b, barriers, 8 * first), stage, 8),
        3);
  };
  Value qFull = barrier(0);

  Value tid = threadId();
  // The longest causal rows first, so that the short ones fill the tail.
  Value qTile = blockId(gpu::Dimension::x);
  if (causal)
    qTile = subi(idx(qTiles - 1), qTile);
  Value bh = blockId(gpu::Dimension::y);
  Value batchIndex = divi(bh, s.hq);
  Value head = remi(bh, s.hq), kvHead = divi(head, group);
  Value q0 = muli(qTile, idx(br));
  // Key tiles: all, or (causal) up to the one holding the block's last row.
  Value tiles = idx(kvTiles);
  if (causal) {
    int64_t lastRow = std::min<int64_t>(s.nq, s.nk) - 1;
    Value last = mini(addi(q0, idx(br - 1)), idx(lastRow));
    tiles = addi(divi(last, bc), idx(1));
  }

  ifThen(cmpi(arith::CmpIPredicate::eq, tid, idx(0)), [&] {
    for (int64_t i = 0; i < 5; ++i)
      NVVM::MBarrierInitOp::create(b, barrier(i), i32(1), Value());
    for (int64_t i = 5; i < 7; ++i)
      NVVM::MBarrierInitOp::create(b, barrier(i), i32(kConsumers), Value());
    NVVM::FenceMbarrierInitOp::create(b);
  });
  gpu::BarrierOp::create(b);

  Value warpgroup = divi(tid, 128);
  auto ifOp = scf::IfOp::create(
      b, TypeRange(), cmpi(arith::CmpIPredicate::eq, warpgroup, idx(0)),
      /*withElseRegion=*/true);
  {
    // The producer.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, kProducerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
    ifThen(cmpi(arith::CmpIPredicate::eq, tid, idx(0)), [&] {
      Value b32 = toI32(batchIndex);
      auto copyPanels = [&](Value map, Value dst, int64_t width, int64_t rows,
                            Value row0, Value h, Value bar) {
        NVVM::MBarrierArriveExpectTxOp::create(
            b, Type(), bar, i32(panels(width) * rows * 128),
            NVVM::MemScopeKind::CTA, false, Value());
        for (int64_t p = 0; p < panels(width); ++p)
          wgmma::copyBox(b, wgmma::offset(b, dst, p * rows * 128), map,
                         ValueRange{i32(64 * p), toI32(row0), toI32(h), b32},
                         bar);
      };
      copyPanels(qMap, qBase, s.d, br, q0, head, qFull);
      loop(idx(0), tiles, idx(1), {}, [&](Value j, ValueRange) {
        Value stage = remi(j, 2);
        // Free once both consumers released its previous round.
        Value parity = toI32(arith::XOrIOp::create(b, remi(divi(j, 2), 2),
                                                   idx(1)));
        wgmma::waitBarrier(b, barrierAt(5, stage), parity);
        Value kv0 = muli(j, idx(bc));
        copyPanels(kMap, wgmma::offset(b, kBase, stage, kBytes), s.d, bc, kv0,
                   kvHead, barrierAt(1, stage));
        copyPanels(vMap, wgmma::offset(b, vBase, stage, vBytes), s.dv, bc,
                   kv0, kvHead, barrierAt(3, stage));
        return SmallVector<Value>();
      });
    });
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  NVVM::SetMaxRegisterOp::create(b, kConsumerRegisters,
                                 NVVM::SetMaxRegisterAction::increase);
  Value ctid = subi(tid, idx(128));
  Value consumer = divi(ctid, 128);
  Value leader = cmpi(arith::CmpIPredicate::eq, remi(ctid, 128), idx(0));
  Value lane = remi(ctid, 32), warp = remi(divi(ctid, 32), 4);
  Value g = divi(lane, 4), t = remi(lane, 4);
  // The thread's query rows: g and g + 8 of its warp's 16 of the
  // consumer's 64.
  Value row0 = addi(addi(q0, muli(consumer, idx(64))),
                    addi(muli(warp, idx(16)), g));
  Value rows[2] = {row0, addi(row0, idx(8))};
  // Q's 64 rows of this consumer, in every panel.
  Value qRows = wgmma::offset(b, qBase, consumer, 64 * 128);
  wgmma::waitBarrier(b, qFull, i32(0));
  // Ping-pong: consumer c waits at named barrier 1 + c for its turn to issue
  // its GEMMs and, once they are issued, lets the other one go; the first
  // turn is consumer 0's. Both run the same number of key tiles.
  Value myTurn = addi(toI32(consumer), i32(1));
  Value otherTurn = subi(i32(2), toI32(consumer));
  auto arriveAt = [&](Value id) {
    NVVM::BarrierArriveOp::create(b, id, i32(2 * 128));
  };
  if (pingPong)
    ifThen(cmpi(arith::CmpIPredicate::eq, consumer, idx(0)),
           [&] { arriveAt(myTurn); });

  SmallVector<Value> init{wgmma::zeroAccumulators(b, s.dv), negInf, negInf,
                          zero, zero};
  SmallVector<Value> state = loop(
      idx(0), tiles, idx(1), init,
      [&](Value j, ValueRange args) -> SmallVector<Value> {
        Value stage = remi(j, 2);
        Value parity = toI32(remi(divi(j, 2), 2));
        Value kv0 = muli(j, idx(bc));
        Value kTile = wgmma::offset(b, kBase, stage, kBytes);
        Value vTile = wgmma::offset(b, vBase, stage, vBytes);

        // S = Q K^T, k-step i of the head dim in panel i / 4 at byte
        // 32 (i % 4) of its rows.
        wgmma::waitBarrier(b, barrierAt(1, stage), parity);
        if (pingPong)
          NVVM::BarrierOp::create(b, Type(), myTurn, i32(2 * 128), nullptr,
                                  Value());
        NVVM::WgmmaFenceAlignedOp::create(b);
        Value sStruct = wgmma::zeroAccumulators(b, bc);
        for (int64_t i = 0; i < qSteps; ++i)
          sStruct = wgmma::mmaSS(
              b, sStruct,
              wgmma::descriptor(b, wgmma::offset(b, qRows, (i / 4) * br * 128 +
                                                               (i % 4) * 32),
                                true, 0),
              wgmma::descriptor(b, wgmma::offset(b, kTile, (i / 4) * bc * 128 +
                                                               (i % 4) * 32),
                                true, 0),
              bc, elementType, true, true);
        NVVM::WgmmaGroupSyncAlignedOp::create(b);
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
        SmallVector<Value> sAcc = wgmma::accumulatorValues(b, sStruct);

        // Scaled scores; element e of fragment f is row rows[e / 2], key
        // kv0 + 8f + 2t + e % 2 (mma.sync's layout).
        if (prescale)
          for (Value &x : sAcc)
            x = mulf(x, f32(scaleLog2));
        auto keyOf = [&](int64_t f, int64_t e) {
          return addi(kv0, addi(idx(8 * f + e % 2), muli(t, idx(2))));
        };
        if (mask) {
          ArrayRef<int64_t> maskShape = shapeOf(op.getMask());
          Value log2eV = f32(log2e);
          for (int64_t f = 0; f < sFrags; ++f)
            for (int64_t e = 0; e < 4; ++e) {
              Value i = mini(rows[e / 2], idx(s.nq - 1));
              Value key = mini(keyOf(f, e), idx(s.nk - 1));
              Value m = load(mask, broadcastCoords({batchIndex, head, i, key},
                                                   maskShape));
              sAcc[f * 4 + e] = fma(m, log2eV, sAcc[f * 4 + e]);
            }
        }
        if (causal || s.nk % bc) {
          Value edge = cmpi(arith::CmpIPredicate::sgt, addi(kv0, idx(bc)),
                            idx(s.nk));
          if (causal)
            edge = arith::OrIOp::create(
                b, edge,
                cmpi(arith::CmpIPredicate::sgt, addi(kv0, idx(bc - 1)), q0));
          SmallVector<Type> types(sAcc.size(), b.getF32Type());
          auto edgeIf = scf::IfOp::create(b, types, edge, true);
          {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(edgeIf.thenBlock());
            SmallVector<Value> masked;
            for (int64_t f = 0; f < sFrags; ++f)
              for (int64_t e = 0; e < 4; ++e) {
                Value key = keyOf(f, e);
                Value ok = ltc(key, s.nk);
                if (causal)
                  ok = andi(ok, cmpi(arith::CmpIPredicate::sle, key,
                                     rows[e / 2]));
                masked.push_back(select(ok, sAcc[f * 4 + e], negInf));
              }
            scf::YieldOp::create(b, masked);
            b.setInsertionPointToStart(edgeIf.elseBlock());
            scf::YieldOp::create(b, sAcc);
          }
          sAcc.assign(edgeIf.getResults().begin(), edgeIf.getResults().end());
        }

        // Online softmax, per row r of the thread's two.
        SmallVector<Value> o = wgmma::accumulatorValues(b, args[0]);
        Value m[2] = {args[1], args[2]};
        Value l[2] = {args[3], args[4]};
        for (int64_t r = 0; r < 2; ++r) {
          Value mx = negInf;
          for (int64_t f = 0; f < sFrags; ++f)
            mx = maxf(mx, maxf(sAcc[f * 4 + 2 * r], sAcc[f * 4 + 2 * r + 1]));
          Value mNew = maxf(m[r], quadReduce(mx, /*max=*/true));
          Value mUse = select(arith::CmpFOp::create(
                                  b, arith::CmpFPredicate::OEQ, mNew, negInf),
                              zero, mNew);
          Value alpha = exp2(mulf(subf(m[r], mUse), mult));
          Value offset = arith::NegFOp::create(b, mulf(mUse, mult));
          Value sum = zero;
          for (int64_t f = 0; f < sFrags; ++f)
            for (int64_t e = 2 * r; e < 2 * r + 2; ++e) {
              Value p = exp2(fma(sAcc[f * 4 + e], mult, offset));
              sAcc[f * 4 + e] = p;
              sum = addf(sum, p);
            }
          l[r] = fma(l[r], alpha, sum);
          m[r] = mNew;
          for (int64_t f = 0; f < vFrags; ++f)
            for (int64_t e = 2 * r; e < 2 * r + 2; ++e)
              o[f * 4 + e] = mulf(o[f * 4 + e], alpha);
        }

        // O += P V: P's accumulators of keys 16p.. are the A registers of
        // k-step p; V's tile, 16 key rows of 128 bytes per k-step, read
        // MN-major (panels of 64 head dims, bc rows each).
        // Every register the wgmma read is written before the fence.
        SmallVector<SmallVector<Value>> aRegs;
        for (int64_t p = 0; p < pSteps; ++p) {
          SmallVector<Value> &a = aRegs.emplace_back();
          for (int64_t half = 0; half < 2; ++half)
            for (int64_t r = 0; r < 2; ++r) {
              int64_t f = 2 * p + half;
              a.push_back(packPair(b, type, elementType, sAcc[f * 4 + 2 * r],
                                   sAcc[f * 4 + 2 * r + 1]));
            }
          if (type.ptx == NVVM::MMATypes::f16)
            for (Value &reg : a)
              reg = vector::ExtractOp::create(
                  b,
                  vector::BitCastOp::create(
                      b, VectorType::get({1}, b.getI32Type()), reg),
                  0);
        }
        Value oStruct = wgmma::accumulatorStruct(b, o);
        wgmma::waitBarrier(b, barrierAt(3, stage), parity);
        NVVM::WgmmaFenceAlignedOp::create(b);
        for (int64_t p = 0; p < pSteps; ++p)
          oStruct = wgmma::mmaRS(
              b, oStruct, aRegs[p],
              wgmma::descriptor(b, wgmma::offset(b, vTile, p * 16 * 128),
                                false, bc * 128),
              s.dv, elementType, /*bKMajor=*/false);
        NVVM::WgmmaGroupSyncAlignedOp::create(b);
        if (pingPong)
          arriveAt(otherTurn);
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
        // This consumer is done with the stage.
        ifThen(leader, [&] {
          NVVM::MBarrierArriveOp::create(b, Type(), barrierAt(5, stage),
                                         Value());
        });
        return {oStruct, m[0], m[1], l[0], l[1]};
      });

  // O / l, 0 for a row that saw no key; then the epilogue, two columns at a
  // time.
  SmallVector<Value> o = wgmma::accumulatorValues(b, state[0]);
  for (int64_t r = 0; r < 2; ++r) {
    Value l = quadReduce(state[3 + r], /*max=*/false);
    Value inv = select(
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, l, zero),
        divf(f32(1), l), zero);
    ifThen(ltc(rows[r], s.nq), [&] {
      for (int64_t f = 0; f < vFrags; ++f) {
        Value col = addi(idx(8 * f), muli(t, idx(2)));
        SmallVector<Value> values = {mulf(o[f * 4 + 2 * r], inv),
                                     mulf(o[f * 4 + 2 * r + 1], inv)};
        epilogue.storeVectorResults(views.storedCoords({batchIndex, head, rows[r], col}), 2,
                           values);
      }
    });
  }
  // One block per SM holds the registers setmaxnreg moves.
  func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  return LaunchConfig{{qTiles, s.batch * s.hq, 1}, {threads, 1, 1}};
}
