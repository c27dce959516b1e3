//===- AttentionGradWgmma.cpp - Attention backward on Hopper's wgmma ------===//
//
// fuse.attention_grad on sm_90a, in FlashAttention-3's structure (f16 and
// bf16, head dims multiples of 8 up to 128), in three launches:
//
//  1. `<kernel>_pre`, lanes per query row padded to whole tiles: delta =
//     rowsum(dO * O) and the log-sum-exp times log2(e) into workspaces the
//     main loop copies by TMA, and the f32 dQ accumulator zeroed;
//  2. `<kernel>_main`, a block per kBc = 128 keys of a (batch, key head):
//     - a producer warpgroup, one thread of which issues TMA copies: K and
//       V once, then per query tile of kBr = 64 rows (of every query head of
//       the group; causal: from the tile of the block's first key on) Q with
//       its log-sum-exp and delta, and dO, through two stages; and one warp
//       of which, the dQ writer, adds what the consumers stage of dQ to its
//       accumulator (below);
//     - two consumer warpgroups, 64 keys each, computing by wgmma from
//       shared memory S^T = K Q^T and dP^T = V dO^T (m64 keys x n64
//       queries; P is computed while dP^T is in flight), then P^T and
//       dS^T = P^T (dP^T - delta) in registers, dV += P^T dO and
//       dK += dS^T Q with P and dS as A operands from registers (dK and dV
//       stay in registers across the loop), and dS^T to shared memory,
//       where it is dS's MN-major A operand of dQ = dS K: a consumer per
//       64-dim panel of the head dims stages its share in shared memory in
//       its accumulators' order, and the writer adds it to the f32
//       accumulator by a TMA bulk reduction (a tile's panel in one
//       instruction: per-element atomics took d128 from 0.18 to 0.37 ms),
//       the two meeting at named barriers;
//  3. the kernel itself: dQ = scale * accumulator, read in that order (16
//     bytes a thread).
//
// The stages and their mbarriers are the TmaPipeline's (Pipeline.h), as in
// AttentionWgmma.cpp and GemmWgmma.cpp. dK and dV are each a warpgroup's sum
// in a fixed order; the order in which the key blocks' reductions reach dQ
// depends on timing, and so do its last bits, unless the op is
// `deterministic`: then every block of keys walks the query tiles in the
// same order (QueryWalk::ordered) and adds its share of a tile's panel once
// the blocks of keys before it have (an i32 counter per tile and panel,
// zeroed by the first launch, FlashAttention-3's dq_semaphore). A block
// waits only for blocks launched before it, so it cannot wait for one that
// has no SM; the writer waits and signals, off the consumers' path.
//
//===----------------------------------------------------------------------===//

#include "AttentionGrad.h"
#include "ExtraLaunches.h"
#include "Families.h"
#include "MmaSync.h"
#include "Pipeline.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {

constexpr int64_t kBc = 128, kBr = 64, kConsumers = 2;

/// K and V completed once; per stage Q with its log-sum-exp and delta
/// (load 0), then dO (load 1), so that S^T starts before dO has landed.
constexpr TmaPipeline::Config kPipeline = {/*stages=*/2, /*loads=*/2,
                                           /*once=*/1, kConsumers};

/// Head dims rounded up to whole 64-element panels.
int64_t panels(int64_t width) { return ceilDiv(width, 64); }
/// The head dims of panel `panel` of `width`.
int64_t panelWidth(int64_t width, int64_t panel) {
  return std::min<int64_t>(64, width - 64 * panel);
}

/// Shared memory: K and V, two stages of Q and dO, two of dS^T (a consumer
/// may write the next one while the other still reads this one), dQ's
/// 64 x 64 f32 per consumer, two stages of the log-sum-exp and delta, the
/// mbarriers.
int64_t sharedBytesOf(int64_t d, int64_t dv) {
  return kBc * (panels(d) + panels(dv)) * 128 +
         2 * kBr * (panels(d) + panels(dv)) * 128 + 2 * kBc * 128 +
         kConsumers * 64 * 64 * 4 + 4 * kBr * 4 +
         TmaPipeline::barrierCount(kPipeline) * 8;
}

class AttentionGradWgmmaKernel : public AttentionGradKernel {
public:
  using AttentionGradKernel::AttentionGradKernel;

private:
  FailureOr<LaunchConfig> emitBody() override;
  /// Launch 2 (see the file comment).
  LaunchConfig emitMain();
  /// Launch 3: dQ = scale * the accumulator, in its order (emitMain).
  LaunchConfig emitConvert();

  Value i32(int64_t v) {
    return arith::ConstantIntOp::create(b, b.getI32Type(), v);
  }
  Value toI32(Value index) {
    return arith::IndexCastOp::create(b, b.getI32Type(), index);
  }
  /// A TMA map over gpu.func parameter `param`, a row-major tensor of
  /// `dims` (innermost first) of `bytes`-byte elements, in boxes of `box`.
  Value tensorMap(Value param, ArrayRef<int64_t> dims, ArrayRef<int64_t> box,
                  int64_t bytes, int64_t swizzle);

  /// Orders this thread's shared-memory writes before reads by the async
  /// proxy (wgmma, TMA) that a barrier orders after them.
  void fenceProxy() {
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
  }
  /// Orders this thread's completed bulk reductions (the async proxy) and
  /// global accesses before its later ones, at GPU scope: with an atomic,
  /// the release or acquire of a dQ counter.
  void fenceGlobal() {
    NVVM::FenceProxyOp::create(b, NVVM::ProxyKind::async_global,
                               NVVM::SharedSpaceAttr());
    NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
  }
  /// bar.arrive `id` over `threads` by the whole warp: after a convergent
  /// bar.warp.sync, as LLVM takes the inline asm it becomes for code it may
  /// duplicate into the branches of a lane's condition before it (which
  /// hangs the barrier).
  void arrive(int64_t id, int64_t threads) {
    NVVM::SyncWarpOp::create(b, i32(-1));
    NVVM::BarrierArriveOp::create(b, i32(id), i32(threads));
  }
  /// bar.sync `id` (i32) over `threads`.
  void barrier(Value id, int64_t threads) {
    NVVM::BarrierOp::create(b, Type(), id, i32(threads), nullptr, Value());
  }
  /// Waits until this thread's bulk reductions have read shared memory
  /// (`read`) or completed.
  void waitReductions(bool read) {
    NVVM::CpAsyncBulkWaitGroupOp::create(b, b.getI32IntegerAttr(0),
                                         read ? b.getUnitAttr() : UnitAttr());
  }

  static constexpr int64_t kProducerRegisters = 24, kConsumerRegisters = 240;
  /// Named barriers: the consumers' dS tile written (256 threads); consumer
  /// c's dQ panel staged, and read again by the writer (its 128 threads
  /// and the writer's 32).
  static constexpr int64_t kDsBarrier = 1, kDqFull = 2, kDqEmpty = 4;

  Type elementType;
  MmaType type;
  Value delta, lse2, dqAcc;
  /// The deterministic dQ's counters, [batch, hq, tiles, panels]: how many
  /// blocks of keys have added their share of the tile's panel.
  Value counters;
};

} // namespace

bool fusec::tiling::isWgmmaAttentionGrad(AttentionGradOp op,
                                         const TargetDescription &target) {
  ArrayRef<int64_t> q = op.getQuery().getType().getShape();
  ArrayRef<int64_t> v = op.getValue().getType().getShape();
  return target.tensorCores == fusec::TensorCores::Wgmma &&
         isMmaSyncAttentionGrad(op) &&
         wgmma::tmaAddressable(op.getQuery().getType().getShape()) &&
         wgmma::tmaAddressable(op.getKey().getType().getShape()) &&
         wgmma::tmaAddressable(v) &&
         sharedBytesOf(q[3], v[3]) <= target.sharedBytesPerBlockOptIn;
}

std::unique_ptr<KernelBuilder> fusec::tiling::makeAttentionGradWgmmaKernel(
    KernelOp kernel, gpu::GPUModuleOp module, const TargetDescription &target) {
  return std::make_unique<AttentionGradWgmmaKernel>(kernel, module, target);
}

Value AttentionGradWgmmaKernel::tensorMap(Value param, ArrayRef<int64_t> dims,
                                          ArrayRef<int64_t> box, int64_t bytes,
                                          int64_t swizzle) {
  TensorMapParam map;
  map.memref = cast<BlockArgument>(param).getArgNumber();
  map.dims.assign(dims.begin(), dims.end());
  int64_t stride = bytes;
  for (int64_t dim : dims.drop_back())
    map.strides.push_back(stride *= dim);
  map.box.assign(box.begin(), box.end());
  map.swizzle = swizzle;
  return addTensorMap(map);
}

LaunchConfig AttentionGradWgmmaKernel::emitMain() {
  int64_t threads = 128 * (1 + kConsumers);
  int64_t bytes = type.bytes;
  // Q, dO [B * H, N, D] and K, V [B * Hkv, N, D]: boxes of a 64-wide panel
  // of the head dims (zero past D, so that a swizzled tile's rows are 128
  // bytes) by a tile's rows; the log-sum-exp and delta [B * Hq, rows], a
  // tile's 64 values (no swizzle).
  int64_t rows = ceilDiv(nq, kBr) * kBr;
  Value qMap = tensorMap(q, {d, nq, batch * hq}, {64, kBr, 1}, bytes, 128);
  Value doMap = tensorMap(dO, {dv, nq, batch * hq}, {64, kBr, 1}, bytes, 128);
  Value kMap = tensorMap(k, {d, nk, batch * hkv}, {64, kBc, 1}, bytes, 128);
  Value vMap = tensorMap(v, {dv, nk, batch * hkv}, {64, kBc, 1}, bytes, 128);
  Value lseMap = tensorMap(lse2, {rows, batch * hq}, {kBr, 1}, 4, 0);
  Value deltaMap = tensorMap(delta, {rows, batch * hq}, {kBr, 1}, 4, 0);
  // The dQ accumulator as rows of 256 f32: a panel of a query tile (64
  // queries x n head dims, 64 n f32 in the accumulators' order, see
  // emitConvert) is n / 4 rows. A map for full panels, one for a narrower
  // last.
  Value fullDqMap, lastDqMap;
  int64_t dqRows = batch * hq * rows * d / 256;
  if (dqAcc && d >= 64)
    fullDqMap = tensorMap(dqAcc, {256, dqRows}, {256, 16}, 4, 0);
  if (dqAcc && d % 64)
    lastDqMap = tensorMap(dqAcc, {256, dqRows}, {256, d % 64 / 4}, 4, 0);

  int64_t kBytes = kBc * panels(d) * 128, vBytes = kBc * panels(dv) * 128;
  int64_t qBytes = kBr * panels(d) * 128, doBytes = kBr * panels(dv) * 128;
  Value kBase =
      wgmma::sharedAddress(b, allocShared({kBytes}, b.getI8Type(), 1024));
  Value vBase =
      wgmma::sharedAddress(b, allocShared({vBytes}, b.getI8Type(), 1024));
  Value qBase =
      wgmma::sharedAddress(b, allocShared({2 * qBytes}, b.getI8Type(), 1024));
  Value doBase =
      wgmma::sharedAddress(b, allocShared({2 * doBytes}, b.getI8Type(), 1024));
  // dS^T: per key row, 64 queries of 2 bytes (one 128-byte-swizzled row).
  Value dsS = allocShared({2, kBc, 32}, b.getI32Type(), 1024);
  Value dsBase = wgmma::sharedAddress(b, dsS);
  // dQ's tile in the accumulators' order (see emitConvert), for the bulk
  // reduction: a 64-dim panel per consumer.
  Value dqS = dqAcc ? allocShared({kConsumers * 64 * 64}, b.getF32Type(), 128)
                    : Value();
  Value lseS = allocShared({2, kBr}, b.getF32Type(), 128);
  Value deltaS = allocShared({2, kBr}, b.getF32Type(), 128);
  Value barrierSmem =
      allocShared({TmaPipeline::barrierCount(kPipeline)}, b.getI64Type(), 8);
  TmaPipeline pipeline(b, wgmma::sharedAddress(b, barrierSmem), kPipeline);
  Value kvFull = pipeline.onceBarrier(0);

  Value tid = threadId();
  // Blocks of every (batch, key head) for the first keys come first: causal,
  // they walk the most query tiles, and the short ones fill in after them.
  Value kv0 = muli(blockId(gpu::Dimension::y), idx(kBc));
  Value bh = blockId(gpu::Dimension::x);
  Value bi = divi(bh, hkv), hk = remi(bh, hkv);

  QueryWalk walk = walkQueries(kv0, hk, kBr, /*ordered=*/bool(counters));
  Value steps = walk.steps;
  // The counter of step `it`'s tile, `panel`.
  auto counterAt = [&](Value it, Value panel) {
    return SmallVector<Value>{bi, headAt(walk, it), divi(rowAt(walk, it), kBr),
                              panel};
  };
  // dQ's panel `panel` of step `it`'s tile, staged in shared memory in the
  // accumulators' order, added to the accumulator's rows of 256 f32 by one
  // bulk reduction.
  auto reduceDq = [&](Value it, int64_t panel) {
    Value tile =
        addi(muli(addi(muli(bi, idx(hq)), headAt(walk, it)), idx(rows / kBr)),
             divi(rowAt(walk, it), kBr));
    Value row = addi(muli(tile, idx(kBr * d / 256)), idx(panel * 16));
    NVVM::CpAsyncBulkTensorReduceOp::create(
        b, panelWidth(d, panel) == 64 ? fullDqMap : lastDqMap,
        wgmma::sharedPointer(b,
                             wgmma::offset(b, wgmma::sharedAddress(b, dqS),
                                           idx(panel * 64 * 64), 4),
                             3),
        NVVM::TMAReduxKindAttr::get(b.getContext(), NVVM::TMAReduxKind::ADD),
        NVVM::TMAStoreModeAttr::get(b.getContext(), NVVM::TMAStoreMode::TILE),
        ValueRange{i32(0), toI32(row)}, Value());
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
  };
  // Deterministic: waits until the blocks of keys before this one have
  // added their shares of the panel (its counter is this block's index).
  auto waitTurn = [&](Value it, int64_t panel) {
    SmallVector<Value> at = counterAt(it, idx(panel));
    Value zero = i32(0), self = toI32(blockId(gpu::Dimension::y));
    scf::WhileOp::create(
        b, TypeRange{}, ValueRange{},
        [&](OpBuilder &nb, Location loc, ValueRange) {
          ImplicitLocOpBuilder ib(loc, nb);
          Value seen = memref::AtomicRMWOp::create(
              ib, arith::AtomicRMWKind::addi, zero, counters, at);
          scf::ConditionOp::create(
              ib,
              arith::CmpIOp::create(ib, arith::CmpIPredicate::ne, seen, self),
              ValueRange{});
        },
        [&](OpBuilder &nb, Location loc, ValueRange) {
          scf::YieldOp::create(nb, loc);
        });
    fenceGlobal();
  };

  ifThen(cmpi(arith::CmpIPredicate::eq, tid, idx(0)), [&] { pipeline.init(); });
  gpu::BarrierOp::create(b);

  OpBuilder::InsertionGuard guard(b);
  auto producer = [&] {
    auto copyPanels = [&](Value map, Value dst, int64_t width, int64_t tileRows,
                          Value row0, Value matrix, Value bar) {
      for (int64_t p = 0; p < panels(width); ++p)
        wgmma::copyBox(b, wgmma::offset(b, dst, p * tileRows * 128), map,
                       ValueRange{i32(64 * p), toI32(row0), toI32(matrix)},
                       bar);
    };
    pipeline.expectBytes(kvFull, kBytes + vBytes);
    copyPanels(kMap, kBase, d, kBc, kv0, bh, kvFull);
    copyPanels(vMap, vBase, dv, kBc, kv0, bh, kvFull);
    loop(idx(0), steps, idx(1), {}, [&](Value it, ValueRange) {
      // Free once both consumers released its previous round.
      PipelineState state = pipeline.producerState(it);
      pipeline.producerAcquire(state);
      Value stage = state.stage, q0 = rowAt(walk, it);
      Value matrix = addi(muli(bi, idx(hq)), headAt(walk, it));
      Value full = pipeline.full(stage, /*load=*/0);
      pipeline.expectBytes(full, qBytes + 2 * kBr * 4);
      copyPanels(qMap, wgmma::offset(b, qBase, stage, qBytes), d, kBr, q0,
                 matrix, full);
      for (auto [map, buffer] : {std::pair(lseMap, lseS), {deltaMap, deltaS}})
        wgmma::copyBox(
            b,
            wgmma::offset(b, wgmma::sharedAddress(b, buffer), stage, kBr * 4),
            map, ValueRange{toI32(q0), toI32(matrix)}, full);
      full = pipeline.full(stage, /*load=*/1);
      pipeline.expectBytes(full, doBytes);
      copyPanels(doMap, wgmma::offset(b, doBase, stage, doBytes), dv, kBr, q0,
                 matrix, full);
      return SmallVector<Value>();
    });
  };
  // Warp 1 of the producer warpgroup adds dQ's panels (FlashAttention-3's
  // dQ writer), so that the consumers never wait for a reduction (or, in
  // the deterministic order, for a counter). Per step and panel, it waits
  // until the panel's consumer staged it (kDqFull), then (deterministic)
  // for its turn, and reduces; once the reductions have read shared memory
  // it frees the panels (kDqEmpty), and (deterministic) once they completed
  // it counts them. (Issuing them from the consumers instead took d128
  // from 0.209 to 0.218 ms and the deterministic d64 from 0.172 to 0.194.)
  auto writer = [&] {
    Value lane0 = cmpi(arith::CmpIPredicate::eq, remi(tid, 32), idx(0));
    loop(idx(0), steps, idx(1), {}, [&](Value it, ValueRange) {
      for (int64_t panel = 0; panel < panels(d); ++panel) {
        barrier(i32(kDqFull + panel % kConsumers), 128 + 32);
        ifThen(lane0, [&] {
          if (counters)
            waitTurn(it, panel);
          reduceDq(it, panel);
        });
      }
      ifThen(lane0, [&] { waitReductions(/*read=*/true); });
      // Not after the last step: no consumer waits for it.
      ifThen(lt(it, subi(steps, idx(1))), [&] {
        for (int64_t panel = 0; panel < panels(d); ++panel)
          arrive(kDqEmpty + panel % kConsumers, 128 + 32);
      });
      if (!counters)
        return SmallVector<Value>();
      ifThen(lane0, [&] {
        waitReductions(/*read=*/false);
        fenceGlobal();
        for (int64_t panel = 0; panel < panels(d); ++panel)
          memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi, i32(1),
                                      counters, counterAt(it, idx(panel)));
      });
      return SmallVector<Value>();
    });
    if (!counters)
      ifThen(lane0, [&] { waitReductions(/*read=*/false); });
  };
  ConsumerThread thread = splitWarpgroups(
      b, tid, WarpgroupRegisters{kProducerRegisters, kConsumerRegisters},
      producer, dqAcc ? function_ref<void()>(writer) : nullptr);
  Value ctid = thread.tid, consumer = thread.warpgroup;
  Value lane = remi(ctid, 32), warp = remi(divi(ctid, 32), 4);
  Value g = divi(lane, 4), t = remi(lane, 4);
  // The thread's keys: rows g and g + 8 of its warp's 16 of the consumer's
  // 64, the rows of accumulator fields i % 4 < 2 and >= 2.
  Value local0 = addi(muli(consumer, idx(64)), addi(muli(warp, idx(16)), g));
  Value keys[2] = {addi(kv0, local0), addi(kv0, addi(local0, idx(8)))};
  // The consumer's 64 key rows of K and V, in every panel.
  Value kRows = wgmma::offset(b, kBase, consumer, 64 * 128);
  Value vRows = wgmma::offset(b, vBase, consumer, 64 * 128);
  int64_t dSteps = ceilDiv(d, 16), vSteps = ceilDiv(dv, 16), pSteps = kBr / 16;
  wgmma::waitBarrier(b, kvFull, i32(0));

  // S^T (or dP^T) = rows x tile^T, k over the head dims: k-step i in panel
  // i / 4 at byte 32 (i % 4) of the rows.
  auto product = [&](Value rowsTile, Value tile, int64_t steps) {
    Value acc = wgmma::zeroAccumulators(b, kBr);
    for (int64_t i = 0; i < steps; ++i) {
      int64_t at = (i % 4) * 32;
      acc = wgmma::mmaSS(
          b, acc,
          wgmma::descriptor(
              b, wgmma::offset(b, rowsTile, (i / 4) * kBc * 128 + at), true, 0),
          wgmma::descriptor(b, wgmma::offset(b, tile, (i / 4) * kBr * 128 + at),
                            true, 0),
          kBr, elementType, true, true);
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
    return acc;
  };
  // The A registers of k-step p (queries 16p..) from accumulators, as the
  // inline wgmma takes them (i32).
  auto packA = [&](ArrayRef<Value> acc, int64_t p) {
    SmallVector<Value> a = packAccumulatorsAsA(b, type, elementType, acc, p);
    if (type.ptx == NVVM::MMATypes::f16)
      for (Value &reg : a)
        reg = vector::ExtractOp::create(
            b,
            vector::BitCastOp::create(b, VectorType::get({1}, b.getI32Type()),
                                      reg),
            0);
    return a;
  };

  SmallVector<Value> init{wgmma::zeroAccumulators(b, d),
                          wgmma::zeroAccumulators(b, dv)};
  SmallVector<Value> acc = loop(
      idx(0), steps, idx(1), init,
      [&](Value it, ValueRange args) -> SmallVector<Value> {
        PipelineState state = pipeline.consumerState(it);
        Value stage = state.stage, h = headAt(walk, it), q0 = rowAt(walk, it);
        Value qTile = wgmma::offset(b, qBase, stage, qBytes);
        Value doTile = wgmma::offset(b, doBase, stage, doBytes);

        pipeline.consumerWait(state, /*load=*/0);
        NVVM::WgmmaFenceAlignedOp::create(b);
        Value sStruct = product(kRows, qTile, dSteps);
        pipeline.consumerWait(state, /*load=*/1);
        Value dpStruct = product(vRows, doTile, vSteps);

        // P^T while dP^T is in flight: field i of the accumulators is key
        // row i % 4 / 2, query column 8 (i / 4) + 2t + i % 2.
        NVVM::WgmmaWaitGroupSyncOp::create(b, 1);
        SmallVector<Value> p = wgmma::accumulatorValues(b, sStruct);
        SmallVector<Value> col(p.size());
        for (int64_t i = 0, e = p.size(); i < e; ++i) {
          col[i] = addi(idx(8 * (i / 4) + i % 2), muli(t, idx(2)));
          Value rowLse =
              memref::LoadOp::create(b, lseS, ValueRange{stage, col[i]});
          p[i] = probability(p[i], rowLse, bi, h, addi(q0, col[i]),
                             keys[i % 4 / 2]);
        }
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
        SmallVector<Value> ds = wgmma::accumulatorValues(b, dpStruct);
        for (int64_t i = 0, e = ds.size(); i < e; ++i) {
          Value rowDelta =
              memref::LoadOp::create(b, deltaS, ValueRange{stage, col[i]});
          ds[i] = mulf(p[i], subf(ds[i], rowDelta));
          storeScoreGrad(ds[i], bi, h, addi(q0, col[i]), keys[i % 4 / 2]);
        }

        // dV += P^T dO and dK += dS^T Q: queries are the k dim, dO and Q
        // read MN-major (16 query rows of 128 bytes per k-step).
        SmallVector<SmallVector<Value>> pRegs, dsRegs;
        for (int64_t s = 0; s < pSteps; ++s) {
          pRegs.push_back(packA(p, s));
          dsRegs.push_back(packA(ds, s));
        }
        Value dk = args[0], dvAcc = args[1];
        NVVM::WgmmaFenceAlignedOp::create(b);
        for (int64_t s = 0; s < pSteps; ++s)
          dvAcc = wgmma::mmaRS(
              b, dvAcc, pRegs[s],
              wgmma::descriptor(b, wgmma::offset(b, doTile, s * 16 * 128),
                                false, kBr * 128),
              dv, elementType, /*bKMajor=*/false);
        for (int64_t s = 0; s < pSteps; ++s)
          dk = wgmma::mmaRS(
              b, dk, dsRegs[s],
              wgmma::descriptor(b, wgmma::offset(b, qTile, s * 16 * 128), false,
                                kBr * 128),
              d, elementType, /*bKMajor=*/false);
        NVVM::WgmmaGroupSyncAlignedOp::create(b);

        if (dqAcc) {
          // dS^T to shared memory while those run: key row r holds 64
          // queries, 16-byte chunk c at c ^ (r % 8); a register is the
          // query pair 2t.. of chunk s * 2 + e / 2 of k-step s.
          Value dsStage = remi(it, 2);
          for (int64_t s = 0; s < pSteps; ++s)
            for (int64_t e = 0; e < 4; ++e) {
              Value row = subi(keys[e % 2], kv0);
              Value chunk =
                  arith::XOrIOp::create(b, idx(2 * s + e / 2), remi(row, 8));
              memref::StoreOp::create(
                  b, dsRegs[s][e], dsS,
                  ValueRange{dsStage, row, addi(muli(chunk, idx(4)), t)});
            }
          // The writes are seen by wgmma (the async proxy) once the
          // consumers that read them wrote theirs.
          fenceProxy();
          barrier(i32(kDsBarrier), 128 * kConsumers);

          // dQ += dS K: m64 queries, k over keys (dS^T read MN-major, K's
          // rows MN-major), then through shared memory field by field (a
          // field of the warpgroup's 128 threads is 128 consecutive f32)
          // the leader adds the panel (64 x n f32) to the accumulator's
          // rows of 256 f32.
          Value dsTile = wgmma::offset(b, dsBase, dsStage, kBc * 128);
          auto dqProduct = [&](int64_t panel) {
            int64_t n = panelWidth(d, panel), owner = panel % kConsumers;
            Value dq = wgmma::zeroAccumulators(b, n);
            NVVM::WgmmaFenceAlignedOp::create(b);
            for (int64_t s = 0; s < kBc / 16; ++s)
              dq = wgmma::mmaSS(
                  b, dq,
                  wgmma::descriptor(b, wgmma::offset(b, dsTile, s * 16 * 128),
                                    false, kBc * 128),
                  wgmma::descriptor(
                      b,
                      wgmma::offset(b, kBase, panel * kBc * 128 + s * 16 * 128),
                      false, kBc * 128),
                  n, elementType, /*aKMajor=*/false, /*bKMajor=*/false);
            NVVM::WgmmaGroupSyncAlignedOp::create(b);
            NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
            SmallVector<Value> values = wgmma::accumulatorValues(b, dq);
            // The writer has read the previous step's panel.
            ifThen(cmpi(arith::CmpIPredicate::ugt, it, idx(0)),
                   [&] { barrier(i32(kDqEmpty + owner), 128 + 32); });
            Value first = idx(panel * 64 * 64);
            Value wgThread = remi(ctid, 128);
            for (int64_t i = 0, e = values.size(); i < e; ++i)
              memref::StoreOp::create(
                  b, values[i], dqS, addi(addi(first, wgThread), idx(i * 128)));
            fenceProxy();
            arrive(kDqFull + owner, 128 + 32);
          };
          // A 64-dim panel of the head dims per consumer in turn, over all
          // keys. (With one panel, the consumers each adding their own keys'
          // share took d64 from 0.130 to 0.143 ms: twice the reductions.)
          for (int64_t panel = 0; panel < panels(d); ++panel)
            ifThen(cmpi(arith::CmpIPredicate::eq, consumer,
                        idx(panel % kConsumers)),
                   [&] { dqProduct(panel); });
        }
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
        // This consumer is done with the stage's Q and dO.
        ifThen(thread.leader, [&] { pipeline.consumerRelease(stage); });
        return {dk, dvAcc};
      });

  // dK = scale * the sum, dV the sum.
  auto storeRows = [&](int64_t result, Value accStruct, int64_t width,
                       double factor) {
    if (resultAt[result] < 0)
      return;
    SmallVector<Value> values = wgmma::accumulatorValues(b, accStruct);
    for (int64_t i = 0, e = values.size(); i < e; ++i) {
      Value key = keys[i % 4 / 2];
      Value col = addi(idx(8 * (i / 4) + i % 2), muli(t, idx(2)));
      ifThen(andi(ltc(key, nk), ltc(col, width)), [&] {
        store(mulf(values[i], f32(factor)), outputs[resultAt[result]],
              {bi, hk, key, col});
      });
    }
  };
  storeRows(1, acc[0], d, scale);
  storeRows(2, acc[1], dv, 1.0);
  return LaunchConfig{{batch * hkv, ceilDiv(nk, kBc), 1}, {threads, 1, 1}};
}

FailureOr<LaunchConfig> AttentionGradWgmmaKernel::emitBody() {
  if (failed(readAnchor()))
    return failure();
  elementType = getElementTypeOrSelf(op.getQuery().getType());
  type = *mmaTypeOf(elementType, Fp32Math::IEEE);

  // delta and the log-sum-exp padded to whole query tiles (TMA copies a
  // tile's 64 values, 16-byte aligned rows).
  int64_t rows = ceilDiv(nq, kBr) * kBr;
  SmallVector<MemRefType> workspaces = {
      MemRefType::get({batch, hq, rows}, b.getF32Type()),
      MemRefType::get({batch, hq, rows}, b.getF32Type())};
  delta = addWorkspaceArgument(workspaces[0]);
  lse2 = addWorkspaceArgument(workspaces[1]);
  if (resultAt[0] >= 0) {
    workspaces.push_back(MemRefType::get({batch, hq, rows, d}, b.getF32Type()));
    dqAcc = addWorkspaceArgument(workspaces.back());
    if (op.getDeterministic()) {
      workspaces.push_back(
          MemRefType::get({batch, hq, rows / kBr, panels(d)}, b.getI32Type()));
      counters = addWorkspaceArgument(workspaces.back());
    }
  }
  ExtraLaunch pre = splitOffFirstLaunch(
      "_pre", emitRowsPre(delta, dqAcc, lse2, rows, counters));
  // One block per SM holds the registers setmaxnreg moves (the main
  // launch's attribute, not the scaling's).
  func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
  return finishLaunches(workspaces, std::move(pre), emitMain(), bool(dqAcc),
                        [&] {
                          func->removeAttr("nvvm.minctasm");
                          return emitConvert();
                        });
}

LaunchConfig AttentionGradWgmmaKernel::emitConvert() {
  // A thread per 8 head dims of a row. Row 16 w + g + 8 hb and head dims
  // 64 p + 8 k.. of a tile are fields 4 k + 2 hb (even dims) and + 1 (odd)
  // of threads 32 w + 4 g + t, t = 0..3: two 16-byte reads, 128 f32 apart,
  // in the tile's panel p (4096 f32 from panel to panel). Consecutive
  // threads read consecutive 16 bytes.
  int64_t rows = ceilDiv(nq, kBr) * kBr, tiles = batch * hq * rows / kBr;
  int64_t perTile = kBr * d / 8;
  return perElement(tiles * perTile, [&](Value unit) {
    Value tile = divi(unit, perTile), local = remi(unit, perTile);
    Value panel = divi(local, 512), inPanel = remi(local, 512);
    Value g = remi(inPanel, 8), w = remi(divi(inPanel, 8), 4);
    Value hb = remi(divi(inPanel, 32), 2), k = divi(inPanel, 64);
    Value row = addi(addi(muli(w, idx(16)), g), muli(hb, idx(8)));
    Value at =
        addi(addi(muli(panel, idx(4096)),
                  muli(addi(muli(k, idx(4)), muli(hb, idx(2))), idx(128))),
             addi(muli(w, idx(32)), muli(g, idx(4))));
    // The tile's f32 `at` as coordinates of the accumulator [B, Hq, rows,
    // D]; four consecutive stay in one row (D is a multiple of 8).
    SmallVector<Value> tc = delinearize(tile, {batch, hq, rows / kBr});
    auto coords = [&](Value offset) {
      return SmallVector<Value>{tc[0], tc[1],
                                addi(muli(tc[2], idx(kBr)), divi(offset, d)),
                                remi(offset, d)};
    };
    Value even = loadVector(dqAcc, coords(at), 4);
    Value odd = loadVector(dqAcc, coords(addi(at, idx(128))), 4);
    SmallVector<Value> values;
    for (int64_t i = 0; i < 8; ++i)
      values.push_back(arith::TruncFOp::create(
          b, elementType,
          mulf(vector::ExtractOp::create(b, i % 2 ? odd : even, i / 2),
               f32(scale))));
    Value query = addi(muli(tc[2], idx(kBr)), row);
    ifThen(ltc(query, nq), [&] {
      Value out = outputs[resultAt[0]];
      vector::StoreOp::create(
          b, vector::FromElementsOp::create(b, vectorOf(out, 8), values), out,
          ValueRange{tc[0], tc[1], query,
                     addi(muli(panel, idx(64)), muli(k, idx(8)))},
          /*nontemporal=*/false, alignOf(out, 8));
    });
  });
}
