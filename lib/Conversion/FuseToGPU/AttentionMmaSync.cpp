//===- AttentionMmaSync.cpp - FlashAttention on tensor cores (sm_80+) -----===//
//
// fuse.attention in one kernel, as FlashAttention-2 computes it:
//
//  - a block of `warps` warps owns 16 * warps query rows of one (batch,
//    head), each warp 16 of them; the Q tile goes to shared memory once, and
//    (head dims up to 128) into registers as mma.sync A fragments;
//  - K and V tiles of `bc` keys stream through two shared-memory stages by
//    cp.async (zero-filled past the keys and the head dim), the next one in
//    flight while the tensor cores work on this one (waiting for K and V
//    separately, with a second barrier per tile, measured 5-8% slower);
//  - S = Q K^T for the warp's 16 x bc scores lands in accumulator fragments;
//    the softmax runs online on them in f32 (exp2, the scale and log2(e)
//    folded in), each thread holding two rows' running max and partial sum
//    and the quad of threads sharing a row exchanging by shuffles;
//  - P, rounded to the input type, is reused in registers as the A operand
//    of O += P V (V's tile transposed by ldmatrix); O is normalised once at
//    the end and goes through the kernel's epilogue.
//
// Causal attention stops at the diagonal tile, and the blocks of the longest
// rows start first. Masks (additive, causal, keys past the end) are applied
// only on the tiles that need them. No Nq x Nk tensor exists anywhere.
//
// This file holds the mainloop; the schedule, the masks, the softmax, P's
// packing and the normalise-and-store are AttentionKernel's (Attention.h),
// shared with AttentionWgmma.cpp.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Families.h"

#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fuse;
using fusec::TargetDescription;
using namespace fusec::tiling;

namespace {

class AttentionMmaSyncKernel : public AttentionKernel {
public:
  AttentionMmaSyncKernel(KernelOp kernel, gpu::GPUModuleOp module,
                         const TargetDescription &target, AttentionTile tile)
      : AttentionKernel(kernel, module, target), tile(tile) {}

private:
  FailureOr<LaunchConfig> emitAttention() override;

  /// cp.async of rows row0.. of (batch, head) of operand `src` ([B, H, N,
  /// width], read through its transposes; below its rope, if any) into
  /// `stage` of `dst`, `rows` of them, zero past `n` rows and past `width`
  /// columns (up to the next k-step).
  void copyRows(Value dst, Value stage, int64_t rows, Value src, Value head,
                Value row0, int64_t n, int64_t width);
  /// Rotates the rows of `stage` of `buffer` in place as operand `src`'s
  /// rope says (if it has one), row r being position pos0 + r; then a
  /// barrier.
  void rotateRows(Value buffer, Value stage, int64_t rows, Value src,
                  Value pos0, int64_t n);
  /// ldmatrix from `stage` of `buffer` at (row, col), swizzled.
  SmallVector<Value> ldmatrix(Value buffer, Value stage, Value row, Value col,
                              bool transpose) {
    int64_t cols = cast<MemRefType>(buffer.getType()).getShape()[2];
    return emitLdmatrix(b, type, buffer,
                        {stage, row, swizzleColumn(b, type, cols, row, col)},
                        4, transpose);
  }

  AttentionTile tile;
  int64_t threads = 0;
  Value tid, lane;
};

} // namespace

/// Shared memory of `tile`: Q, and two stages of K and V.
static int64_t sharedBytesOf(const AttentionShape &s,
                             const AttentionTile &tile) {
  return 2 * (16 * tile.warps * paddedTileWidth(s.d) +
              2 * tile.bc * (paddedTileWidth(s.d) + paddedTileWidth(s.dv)));
}

AttentionTile fusec::tiling::chooseAttentionTile(AttentionOp op,
                                                 const TargetDescription &) {
  AttentionShape s = AttentionShape::of(op);
  // Registers hold the warp's 16 x dv output and 16 x bc scores: narrower
  // key tiles for the widest heads. Calibrated with bench/sweep.py on an
  // H100 (bench/results, 2026-11-23): 8 warps (twice the queries per K/V
  // tile) win at head dims 64 and 128, with 128-key tiles at 128 and 64-key
  // ones at 64 (128 was 2-14% slower there in the second sweep).
  int64_t widest = std::max(s.d, s.dv);
  if (widest > 128)
    return {/*warps=*/4, /*bc=*/32};
  return {/*warps=*/8, /*bc=*/widest > 64 ? 128 : 64};
}

FailureOr<AttentionTile>
fusec::tiling::attentionTileFromAttr(KernelOp kernel, AttentionOp op,
                                     TileAttr attr,
                                     const TargetDescription &target) {
  AttentionTile tile{attr.getBm() / 16, attr.getBn()};
  bool ok = attr.getBm() % 16 == 0 && tile.warps <= 16 &&
            (attr.getWarpsM() == 0 || attr.getWarpsM() == tile.warps) &&
            attr.getBn() % 16 == 0 && attr.getBn() <= 256 &&
            attr.getBk() == 16 && !attr.getTm() && !attr.getTn() &&
            !attr.getWarpsN() && !attr.getStages() && !attr.getWarpsK();
  if (!ok)
    return kernel.emitOpError("tile ")
           << attr
           << " does not suit attention on tensor cores: it needs bm (query "
              "rows per block) a multiple of 16 up to 256, warps_m 0 or "
              "bm / 16, bn (keys per tile) a multiple of 16 up to 256, "
              "bk = 16 and nothing else";
  int64_t shared = sharedBytesOf(AttentionShape::of(op), tile);
  if (shared > target.sharedBytesPerBlockOptIn)
    return kernel.emitOpError("tile ")
           << attr << " needs " << shared
           << " bytes of shared memory, more than the target's "
           << target.sharedBytesPerBlockOptIn;
  return tile;
}

std::unique_ptr<KernelBuilder> fusec::tiling::makeAttentionMmaSyncKernel(
    KernelOp kernel, gpu::GPUModuleOp module, const TargetDescription &target,
    const AttentionTile &tile) {
  return std::make_unique<AttentionMmaSyncKernel>(kernel, module, target, tile);
}

void AttentionMmaSyncKernel::copyRows(Value dst, Value stage, int64_t rows,
                                      Value src, Value head, Value row0,
                                      int64_t n, int64_t width) {
  int64_t v = type.chunk(), chunks = ceilDiv(width, 16) * 16 / v;
  int64_t cols = cast<MemRefType>(dst.getType()).getShape()[2];
  int64_t items = rows * chunks;
  for (int64_t r = 0; r < ceilDiv(items, threads); ++r) {
    Value e = addi(tid, idx(r * threads));
    auto copy = [&] {
      Value row = divi(e, chunks), col = muli(remi(e, chunks), idx(v));
      Value srcRow = addi(row0, row);
      Value inBounds = andi(ltc(srcRow, n), ltc(col, width));
      Value below = src;
      if (auto rope = src.getDefiningOp<RopeOp>())
        below = rope.getInput();
      auto [memref, indices] =
          views.viewSource(below, {batchIndex, head, srcRow, col});
      emitCopyChunk(b, type, dst,
                    {stage, row, swizzleColumn(b, type, cols, row, col)},
                    memref, indices, inBounds);
    };
    if ((r + 1) * threads <= items)
      copy();
    else
      ifThen(ltc(e, items), copy);
  }
}

void AttentionMmaSyncKernel::rotateRows(Value buffer, Value stage,
                                        int64_t rows, Value src, Value pos0,
                                        int64_t n) {
  auto rope = src.getDefiningOp<RopeOp>();
  if (!rope)
    return;
  int64_t dim = shapeOf(src).back(), half = dim / 2;
  int64_t cols = cast<MemRefType>(buffer.getType()).getShape()[2];
  // Half-split pairs in runs of one 16-byte chunk: x0, x1, cos and sin each
  // move as one vector (swizzling keeps chunks whole). Scalar rotation
  // measured 5x slower than no rope at all (a LLaMA-7B block's attention,
  // bench/results/2026-11-24-h100-8548d53).
  int64_t v = type.chunk();
  if (!rope.getInterleaved() && half % v == 0) {
    int64_t runs = half / v, items = rows * runs;
    auto vecType = VectorType::get({v}, elementType);
    for (int64_t r = 0; r < ceilDiv(items, threads); ++r) {
      Value e = addi(tid, idx(r * threads));
      Value row = divi(e, runs), p0 = muli(remi(e, runs), idx(v));
      Value pos = addi(pos0, row);
      Value ok = ltc(pos, n);
      if ((r + 1) * threads > items)
        ok = andi(ok, ltc(e, items));
      ifThen(ok, [&] {
        auto at = [&](Value col) -> SmallVector<Value> {
          return {stage, row, swizzleColumn(b, type, cols, row, col)};
        };
        Value c1 = addi(p0, idx(half));
        Value x0 = loadVector(buffer, at(p0), v);
        Value x1 = loadVector(buffer, at(c1), v);
        SmallVector<Value> c = views.loadRopeAngles(rope.getCos(), pos, p0, v);
        SmallVector<Value> sn = views.loadRopeAngles(rope.getSin(), pos, p0, v);
        SmallVector<Value> y0, y1;
        for (int64_t l = 0; l < v; ++l) {
          auto lane = [&](Value vec) {
            return toF32(vector::ExtractOp::create(b, vec, l));
          };
          Value a = lane(x0), bb = lane(x1), cl = c[l], sl = sn[l];
          y0.push_back(arith::TruncFOp::create(
              b, elementType, fma(a, cl, arith::NegFOp::create(b, mulf(bb, sl)))));
          y1.push_back(arith::TruncFOp::create(b, elementType,
                                               fma(bb, cl, mulf(a, sl))));
        }
        for (auto [vals, col] : {std::pair{&y0, p0}, std::pair{&y1, c1}})
          vector::StoreOp::create(
              b, vector::FromElementsOp::create(b, vecType, *vals), buffer,
              at(col), /*nontemporal=*/false, llvm::MaybeAlign(16));
      });
    }
    gpu::BarrierOp::create(b);
    return;
  }
  int64_t items = rows * half;
  for (int64_t r = 0; r < ceilDiv(items, threads); ++r) {
    Value e = addi(tid, idx(r * threads));
    Value row = divi(e, half), pair = remi(e, half);
    Value pos = addi(pos0, row);
    Value ok = ltc(pos, n);
    if ((r + 1) * threads > items)
      ok = andi(ok, ltc(e, items));
    ifThen(ok, [&] {
      // Pairs (i, i + D/2), or (2i, 2i + 1) when interleaved.
      Value c0 = rope.getInterleaved() ? muli(pair, idx(2)) : pair;
      Value c1 = rope.getInterleaved() ? addi(c0, idx(1))
                                       : addi(pair, idx(half));
      auto at = [&](Value col) -> SmallVector<Value> {
        return {stage, row, swizzleColumn(b, type, cols, row, col)};
      };
      Value x0 = toF32(memref::LoadOp::create(b, buffer, at(c0)));
      Value x1 = toF32(memref::LoadOp::create(b, buffer, at(c1)));
      Value c = views.loadRopeAngles(rope.getCos(), pos, pair, 1)[0];
      Value s = views.loadRopeAngles(rope.getSin(), pos, pair, 1)[0];
      store(fma(x0, c, arith::NegFOp::create(b, mulf(x1, s))), buffer,
            at(c0));
      store(fma(x1, c, mulf(x0, s)), buffer, at(c1));
    });
  }
  gpu::BarrierOp::create(b);
}

FailureOr<LaunchConfig> AttentionMmaSyncKernel::emitAttention() {
  int64_t br = 16 * tile.warps, bc = tile.bc;
  threads = 32 * tile.warps;
  int64_t qSteps = ceilDiv(shape.d, 16), vFrags = ceilDiv(shape.dv, 16) * 2;
  int64_t sFrags = bc / 8, pSteps = bc / 16;
  // The operands in the kernel body: kernel arguments, possibly under
  // transposes and a rope (isAnchorView).
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();

  tid = threadId();
  lane = remi(tid, 32);
  Value warp = divi(tid, 32), g = divi(lane, 4), t = remi(lane, 4);
  scheduleBlock(br);
  // The query rows of this thread: g and g + 8 of the warp's 16.
  Value row0 = addi(q0, addi(muli(warp, idx(16)), g));
  AttentionFragments frags{{row0, addi(row0, idx(8))}, t};

  Value qs = allocShared({1, br, paddedTileWidth(shape.d)}, elementType, 1024);
  Value ks = allocShared({2, bc, paddedTileWidth(shape.d)}, elementType, 1024);
  Value vs = allocShared({2, bc, paddedTileWidth(shape.dv)}, elementType, 1024);

  // Prologue: Q, then the first K and V tiles, in two commit groups.
  copyRows(qs, idx(0), br, q, head, q0, shape.nq, shape.d);
  NVVM::CpAsyncCommitGroupOp::create(b);
  copyRows(ks, idx(0), bc, k, kvHead, idx(0), shape.nk, shape.d);
  copyRows(vs, idx(0), bc, v, kvHead, idx(0), shape.nk, shape.dv);
  NVVM::CpAsyncCommitGroupOp::create(b);
  NVVM::CpAsyncWaitGroupOp::create(b, 1);
  gpu::BarrierOp::create(b);
  rotateRows(qs, idx(0), br, q, q0, shape.nq);

  // Q's A fragments: lanes 0-15 address rows 0-15 at columns 0-7 of the
  // k-step, lanes 16-31 the same rows at columns 8-15.
  Value qRow = addi(muli(warp, idx(16)), remi(lane, 16));
  Value qCol = muli(divi(lane, 16), idx(8));
  auto qFragments = [&](int64_t step) {
    return ldmatrix(qs, idx(0), qRow, addi(qCol, idx(16 * step)), false);
  };
  bool qInRegisters = qSteps <= 8;
  SmallVector<SmallVector<Value>> qRegs;
  if (qInRegisters)
    for (int64_t step = 0; step < qSteps; ++step)
      qRegs.push_back(qFragments(step));

  Value tiles = keyTiles(br, bc);

  // Loop state: O's fragments (vFrags n8 tiles x 4), then per row the
  // running max and this thread's part of the running sum.
  SmallVector<Value> init(vFrags * 4, zero);
  init.append({negInf, negInf, zero, zero});
  SmallVector<Value> state = loop(
      idx(0), tiles, idx(1), init,
      [&](Value j, ValueRange args) -> SmallVector<Value> {
        Value stage = remi(j, 2);
        Value kv0 = muli(j, idx(bc));
        Value hasNext = lt(addi(j, idx(1)), tiles);
        Value next = subi(idx(1), stage), nextKv0 = addi(kv0, idx(bc));
        // Tile j landed (issued one iteration ago) and every warp is done
        // with tile j - 1, whose stage the next copies overwrite.
        NVVM::CpAsyncWaitGroupOp::create(b, 0);
        gpu::BarrierOp::create(b);
        ifThen(hasNext, [&] {
          copyRows(ks, next, bc, k, kvHead, nextKv0, shape.nk, shape.d);
          copyRows(vs, next, bc, v, kvHead, nextKv0, shape.nk, shape.dv);
        });
        NVVM::CpAsyncCommitGroupOp::create(b);
        rotateRows(ks, stage, bc, k, kv0, shape.nk);

        // S = Q K^T: fragment f holds keys 8f.. of the tile.
        SmallVector<Value> sAcc(sFrags * 4, zero);
        for (int64_t step = 0; step < qSteps; ++step) {
          SmallVector<Value> a =
              qInRegisters ? qRegs[step] : qFragments(step);
          for (int64_t f = 0; f < sFrags; f += 2) {
            // K stored keys x d: matrix i holds keys 8(f + i / 2).. at
            // columns 8(i % 2).. of the step.
            Value row = addi(idx(f * 8), addi(muli(divi(lane, 16), idx(8)),
                                              remi(lane, 8)));
            Value col = addi(idx(16 * step),
                             muli(remi(divi(lane, 8), 2), idx(8)));
            SmallVector<Value> bRegs = ldmatrix(ks, stage, row, col, false);
            for (int64_t h = 0; h < 2; ++h) {
              SmallVector<Value> out = emitMma(
                  b, type, a, {bRegs[2 * h], bRegs[2 * h + 1]},
                  ArrayRef<Value>(sAcc).slice((f + h) * 4, 4));
              llvm::copy(out, sAcc.begin() + (f + h) * 4);
            }
          }
        }

        maskScores(sAcc, frags, kv0, bc);
        SmallVector<Value> o(args.begin(), args.begin() + vFrags * 4);
        Value m[2] = {args[vFrags * 4], args[vFrags * 4 + 1]};
        Value l[2] = {args[vFrags * 4 + 2], args[vFrags * 4 + 3]};
        softmaxStep(sAcc, o, m, l);

        // O += P V: P's accumulators of keys 16p.. are the A fragment of
        // k-step p; V stored keys x dv is transposed by ldmatrix.
        for (int64_t p = 0; p < pSteps; ++p) {
          SmallVector<Value> a = packP(sAcc, p);
          for (int64_t f = 0; f < vFrags; f += 2) {
            Value row = addi(idx(16 * p), remi(lane, 16));
            Value col = addi(idx(8 * f), muli(divi(lane, 16), idx(8)));
            SmallVector<Value> bRegs = ldmatrix(vs, stage, row, col, true);
            for (int64_t h = 0; h < 2; ++h) {
              SmallVector<Value> out =
                  emitMma(b, type, a, {bRegs[2 * h], bRegs[2 * h + 1]},
                          ArrayRef<Value>(o).slice((f + h) * 4, 4));
              llvm::copy(out, o.begin() + (f + h) * 4);
            }
          }
        }
        o.append({m[0], m[1], l[0], l[1]});
        return o;
      });
  NVVM::CpAsyncWaitGroupOp::create(b, 0);

  normaliseAndStore(ArrayRef<Value>(state).take_front(vFrags * 4),
                    {state[vFrags * 4], state[vFrags * 4 + 1]},
                    {state[vFrags * 4 + 2], state[vFrags * 4 + 3]}, frags);
  return LaunchConfig{grid(br), {threads, 1, 1}};
}
