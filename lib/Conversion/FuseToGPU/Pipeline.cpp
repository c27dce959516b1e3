//===- Pipeline.cpp - The TMA pipeline of warp-specialised kernels --------===//
//
// See Pipeline.h. The IR is what GemmWgmma.cpp and AttentionWgmma.cpp each
// emitted before they shared it, in the same order.
//
//===----------------------------------------------------------------------===//

#include "Pipeline.h"

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec::tiling;

void TmaPipeline::init() {
  if (config.arrayIndexed) {
    for (int64_t i = 0; i < config.once; ++i)
      NVVM::MBarrierInitOp::create(b, onceBarrier(i), i32(1), Value());
    for (int64_t s = 0; s < config.stages; ++s) {
      for (int64_t load = 0; load < config.loads; ++load)
        NVVM::MBarrierInitOp::create(b, full(idx(s), load), i32(1), Value());
      NVVM::MBarrierInitOp::create(b, empty(idx(s)), i32(config.consumers),
                                   Value());
    }
  } else {
    int64_t count = barrierCount(config);
    int64_t firstEmpty = count - config.stages;
    for (int64_t i = 0; i < count; ++i)
      NVVM::MBarrierInitOp::create(b, onceBarrier(i),
                                   i32(i < firstEmpty ? 1 : config.consumers),
                                   Value());
  }
  NVVM::FenceMbarrierInitOp::create(b);
}

Value TmaPipeline::onceBarrier(int64_t i) {
  return wgmma::sharedPointer(b, wgmma::offset(b, barriers, 8 * i), 3);
}

Value TmaPipeline::barrier(int64_t first, Value stage) {
  if (config.arrayIndexed) {
    Value i =
        first ? arith::AddIOp::create(b, stage, idx(first)).getResult() : stage;
    return wgmma::sharedPointer(b, wgmma::offset(b, barriers, i, 8), 3);
  }
  return wgmma::sharedPointer(
      b, wgmma::offset(b, wgmma::offset(b, barriers, 8 * first), stage, 8), 3);
}

/// Iteration `i`'s stage, and its round's parity (index).
static std::pair<Value, Value> stageAndParity(ImplicitLocOpBuilder &b, Value i,
                                              int64_t stages) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  auto remi = [&](Value x, int64_t y) -> Value {
    return y == 1 ? idx(0) : arith::RemUIOp::create(b, x, idx(y)).getResult();
  };
  Value stage = remi(i, stages);
  Value round =
      stages == 1 ? i : arith::DivUIOp::create(b, i, idx(stages)).getResult();
  return {stage, remi(round, 2)};
}

static Value toI32(ImplicitLocOpBuilder &b, Value index) {
  return arith::IndexCastOp::create(b, b.getI32Type(), index);
}

PipelineState TmaPipeline::producerState(Value i) {
  auto [stage, parity] = stageAndParity(b, i, config.stages);
  // The phase before the consumers' (a fresh barrier's counts as complete).
  return {stage, toI32(b, arith::XOrIOp::create(b, parity, idx(1)))};
}

void TmaPipeline::producerAcquire(const PipelineState &state) {
  wgmma::waitBarrier(b, empty(state.stage), state.parity);
}

void TmaPipeline::expectBytes(Value full, int64_t bytes) {
  NVVM::MBarrierArriveExpectTxOp::create(
      b, Type(), full, i32(bytes), NVVM::MemScopeKind::CTA, false, Value());
}

PipelineState TmaPipeline::consumerState(Value i) {
  auto [stage, parity] = stageAndParity(b, i, config.stages);
  return {stage, toI32(b, parity)};
}

void TmaPipeline::consumerWait(const PipelineState &state, int64_t load) {
  wgmma::waitBarrier(b, full(state.stage, load), state.parity);
}

void TmaPipeline::consumerRelease(Value stage) {
  NVVM::MBarrierArriveOp::create(b, Type(), empty(stage), Value());
}

ConsumerThread
fusec::tiling::splitWarpgroups(ImplicitLocOpBuilder &b, Value tid,
                               std::optional<WarpgroupRegisters> registers,
                               function_ref<void()> producer,
                               function_ref<void()> helper) {
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  auto isZero = [&](Value x) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, idx(0));
  };
  Value warpgroup = arith::DivUIOp::create(b, tid, idx(128));
  auto ifOp = scf::IfOp::create(b, TypeRange(), isZero(warpgroup),
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    if (registers)
      NVVM::SetMaxRegisterOp::create(b, registers->producer,
                                     NVVM::SetMaxRegisterAction::decrease);
    auto first = scf::IfOp::create(b, TypeRange(), isZero(tid), false);
    b.setInsertionPoint(first.thenBlock()->getTerminator());
    producer();
    if (helper) {
      b.setInsertionPointAfter(first);
      auto warp1 = scf::IfOp::create(
          b, TypeRange(),
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                arith::DivUIOp::create(b, tid, idx(32)),
                                idx(1)),
          false);
      b.setInsertionPoint(warp1.thenBlock()->getTerminator());
      helper();
    }
  }
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  if (registers)
    NVVM::SetMaxRegisterOp::create(b, registers->consumer,
                                   NVVM::SetMaxRegisterAction::increase);
  ConsumerThread thread;
  thread.tid = arith::SubIOp::create(b, tid, idx(128));
  thread.warpgroup = arith::DivUIOp::create(b, thread.tid, idx(128));
  thread.leader =
      isZero(arith::RemUIOp::create(b, thread.tid, idx(128)).getResult());
  return thread;
}
