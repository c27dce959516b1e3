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
//    masks, the softmax and the epilogue are AttentionKernel's, shared with
//    AttentionMmaSync.cpp: Attention.h), and
//    O += P V by wgmma with P, rounded to the input type, taken from
//    registers and V read MN-major; a consumer releases the stage once its
//    P V completed;
//  - registers move from the producer to the consumers (setmaxnreg).
//
// The stages, their mbarriers and the warpgroup split are the TmaPipeline's
// (Pipeline.h), shared with GemmWgmma.cpp.
//
// Q, K and V are read through TMA tensor maps over the kernel arguments
// under their transposes and slices (strides, an offset), so heads split
// out of a fused projection need no copy; a rope keeps the mma.sync kernel,
// which rotates tiles in shared memory. Edges are TMA's zero fill, masked.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Families.h"
#include "Pipeline.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {

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

/// The pipeline: two stages, each with a full barrier for K and one for V
/// (S = Q K^T starts before V has landed), after Q's.
constexpr TmaPipeline::Config kPipeline = {/*stages=*/2, /*loads=*/2,
                                           /*once=*/1, kConsumers};

/// Shared memory of the kernel: Q, two stages of K and V, the mbarriers.
int64_t sharedBytesOf(const AttentionShape &s, int64_t bc) {
  return kRows * panels(s.d) * 128 +
         2 * bc * (panels(s.d) + panels(s.dv)) * 128 +
         TmaPipeline::barrierCount(kPipeline) * 8;
}

class AttentionWgmmaKernel : public AttentionKernel {
public:
  AttentionWgmmaKernel(KernelOp kernel, gpu::GPUModuleOp module,
                       const TargetDescription &target,
                       const AttentionTile &tile)
      : AttentionKernel(kernel, module, target), bc(tile.bc),
        pingPong(tile.pingPong) {}

private:
  FailureOr<LaunchConfig> emitAttention() override;

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), v);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
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
  AttentionShape s = AttentionShape::of(op);
  return std::max(s.d, s.dv) > 128 ? 64 : 128;
}

bool fusec::tiling::suitsWgmmaAttention(AttentionOp op, TileAttr attr,
                                        const TargetDescription &target) {
  return attr.getBm() == kRows && (attr.getBn() == 64 || attr.getBn() == 128) &&
         attr.getBk() == 16 && !attr.getWarpsM() && attr.getWarpsN() <= 2 &&
         sharedBytesOf(AttentionShape::of(op), attr.getBn()) <=
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

FailureOr<LaunchConfig> AttentionWgmmaKernel::emitAttention() {
  int64_t br = kRows, threads = 128 * (1 + kConsumers);
  int64_t qSteps = ceilDiv(shape.d, 16), pSteps = bc / 16;

  // Tensor maps of Q, K and V: [D, N, H, B] over their arguments, boxes of
  // a 64-element panel of the head dim by the tile's rows.
  int64_t bytes = type.bytes;
  auto mapOf = [&](Value operand, int64_t rows) {
    StridedView view = *tmaView(operand);
    ArrayRef<int64_t> dims = shapeOf(operand);
    TensorMapParam map;
    map.memref = view.param;
    map.dims = {dims[3], dims[2], dims[1], dims[0]};
    map.strides = {view.strides[2] * bytes, view.strides[1] * bytes,
                   view.strides[0] * bytes};
    map.offset = view.offset * bytes;
    map.box = {64, rows, 1, 1};
    return addTensorMap(map);
  };
  Value qMap = mapOf(op.getQuery(), br);
  Value kMap = mapOf(op.getKey(), bc);
  Value vMap = mapOf(op.getValue(), bc);

  int64_t qBytes = br * panels(shape.d) * 128;
  int64_t kBytes = bc * panels(shape.d) * 128,
          vBytes = bc * panels(shape.dv) * 128;
  Value qSmem = allocShared({qBytes}, b.getI8Type(), 1024);
  Value kSmem = allocShared({2 * kBytes}, b.getI8Type(), 1024);
  Value vSmem = allocShared({2 * vBytes}, b.getI8Type(), 1024);
  Value barrierSmem =
      allocShared({TmaPipeline::barrierCount(kPipeline)}, b.getI64Type(), 8);
  Value qBase = wgmma::sharedAddress(b, qSmem);
  Value kBase = wgmma::sharedAddress(b, kSmem);
  Value vBase = wgmma::sharedAddress(b, vSmem);
  TmaPipeline pipeline(b, wgmma::sharedAddress(b, barrierSmem), kPipeline);
  Value qFull = pipeline.onceBarrier(0);

  Value tid = threadId();
  scheduleBlock(br);
  Value tiles = keyTiles(br, bc);

  ifThen(cmpi(arith::CmpIPredicate::eq, tid, idx(0)), [&] { pipeline.init(); });
  gpu::BarrierOp::create(b);

  OpBuilder::InsertionGuard guard(b);
  auto producer = [&] {
    Value b32 = toI32(batchIndex);
    auto copyPanels = [&](Value map, Value dst, int64_t width, int64_t rows,
                          Value row0, Value h, Value bar) {
      pipeline.expectBytes(bar, panels(width) * rows * 128);
      for (int64_t p = 0; p < panels(width); ++p)
        wgmma::copyBox(b, wgmma::offset(b, dst, p * rows * 128), map,
                       ValueRange{i32(64 * p), toI32(row0), toI32(h), b32},
                       bar);
    };
    copyPanels(qMap, qBase, shape.d, br, q0, head, qFull);
    loop(idx(0), tiles, idx(1), {}, [&](Value j, ValueRange) {
      // Free once both consumers released its previous round.
      PipelineState state = pipeline.producerState(j);
      pipeline.producerAcquire(state);
      Value stage = state.stage, kv0 = muli(j, idx(bc));
      copyPanels(kMap, wgmma::offset(b, kBase, stage, kBytes), shape.d, bc, kv0,
                 kvHead, pipeline.full(stage, /*load=*/0));
      copyPanels(vMap, wgmma::offset(b, vBase, stage, vBytes), shape.dv, bc,
                 kv0, kvHead, pipeline.full(stage, /*load=*/1));
      return SmallVector<Value>();
    });
  };
  ConsumerThread thread = splitWarpgroups(
      b, tid, WarpgroupRegisters{kProducerRegisters, kConsumerRegisters},
      producer);
  Value ctid = thread.tid, consumer = thread.warpgroup;
  Value lane = remi(ctid, 32), warp = remi(divi(ctid, 32), 4);
  Value g = divi(lane, 4), t = remi(lane, 4);
  // The thread's query rows: g and g + 8 of its warp's 16 of the
  // consumer's 64.
  Value row0 = addi(addi(q0, muli(consumer, idx(64))),
                    addi(muli(warp, idx(16)), g));
  AttentionFragments frags{{row0, addi(row0, idx(8))}, t};
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

  SmallVector<Value> init{wgmma::zeroAccumulators(b, shape.dv), negInf, negInf,
                          zero, zero};
  SmallVector<Value> state = loop(
      idx(0), tiles, idx(1), init,
      [&](Value j, ValueRange args) -> SmallVector<Value> {
        PipelineState state = pipeline.consumerState(j);
        Value stage = state.stage;
        Value kv0 = muli(j, idx(bc));
        Value kTile = wgmma::offset(b, kBase, stage, kBytes);
        Value vTile = wgmma::offset(b, vBase, stage, vBytes);

        // S = Q K^T, k-step i of the head dim in panel i / 4 at byte
        // 32 (i % 4) of its rows.
        pipeline.consumerWait(state, /*load=*/0);
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

        maskScores(sAcc, frags, kv0, bc);
        SmallVector<Value> o = wgmma::accumulatorValues(b, args[0]);
        Value m[2] = {args[1], args[2]};
        Value l[2] = {args[3], args[4]};
        softmaxStep(sAcc, o, m, l);

        // O += P V: P's accumulators of keys 16p.. are the A registers of
        // k-step p; V's tile, 16 key rows of 128 bytes per k-step, read
        // MN-major (panels of 64 head dims, bc rows each).
        // Every register the wgmma read is written before the fence.
        SmallVector<SmallVector<Value>> aRegs;
        for (int64_t p = 0; p < pSteps; ++p) {
          SmallVector<Value> &a = aRegs.emplace_back(packP(sAcc, p));
          if (type.ptx == NVVM::MMATypes::f16)
            for (Value &reg : a)
              reg = vector::ExtractOp::create(
                  b,
                  vector::BitCastOp::create(
                      b, VectorType::get({1}, b.getI32Type()), reg),
                  0);
        }
        Value oStruct = wgmma::accumulatorStruct(b, o);
        pipeline.consumerWait(state, /*load=*/1);
        NVVM::WgmmaFenceAlignedOp::create(b);
        for (int64_t p = 0; p < pSteps; ++p)
          oStruct = wgmma::mmaRS(
              b, oStruct, aRegs[p],
              wgmma::descriptor(b, wgmma::offset(b, vTile, p * 16 * 128), false,
                                bc * 128),
              shape.dv, elementType, /*bKMajor=*/false);
        NVVM::WgmmaGroupSyncAlignedOp::create(b);
        if (pingPong)
          arriveAt(otherTurn);
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
        // This consumer is done with the stage.
        ifThen(thread.leader, [&] { pipeline.consumerRelease(stage); });
        return {oStruct, m[0], m[1], l[0], l[1]};
      });

  normaliseAndStore(wgmma::accumulatorValues(b, state[0]), {state[1], state[2]},
                    {state[3], state[4]}, frags);
  // One block per SM holds the registers setmaxnreg moves.
  func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  return LaunchConfig{grid(br), {threads, 1, 1}};
}
