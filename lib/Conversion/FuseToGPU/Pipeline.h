//===- Pipeline.h - The TMA pipeline of warp-specialised kernels -*- C++ -*-===//
//
// The producer/consumer pipeline of the sm_90a families (GemmWgmma.cpp,
// AttentionWgmma.cpp), in the manner of CUTLASS's PipelineTmaAsync:
//
//  - warpgroup 0 produces: one thread issues TMA copies into `stages`
//    shared-memory buffers; the other warpgroups consume them
//    (splitWarpgroups, which also moves registers between them);
//  - each stage has `loads` "full" mbarriers, one per group of copies that
//    completes on its own (GEMM's A and B together, attention's K apart
//    from V): the producer arms one with the bytes its copies will bring
//    (expectBytes), and TMA completes it;
//  - each stage has one "empty" mbarrier, on which every consumer warpgroup
//    arrives once it is done with the stage (consumerRelease);
//  - iteration i uses stage i % stages in round i / stages: consumers wait
//    for the full barriers' phase of parity round % 2 (consumerWait), the
//    producer for the empty one's phase of parity (round % 2) ^ 1
//    (producerAcquire), which a fresh barrier counts as complete.
//
// In shared memory (8 bytes each): `once` barriers completed a single time
// (attention's Q), then per load a run of `stages` full barriers, then the
// empty ones.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_CONVERSION_FUSETOGPU_PIPELINE_H
#define FUSEC_LIB_CONVERSION_FUSETOGPU_PIPELINE_H

#include "Wgmma.h"

namespace fusec::tiling {

/// The stage an iteration uses, and the parity of the barrier phase it
/// waits for (i32).
struct PipelineState {
  mlir::Value stage, parity;
};

class TmaPipeline {
public:
  struct Config {
    int64_t stages = 2;
    /// Full barriers per stage.
    int64_t loads = 1;
    /// Barriers before the stages, completed once.
    int64_t once = 0;
    /// Arrivals that free a stage: the consumer warpgroups.
    int64_t consumers = 1;
    /// How the code addresses and initialises the barriers (their place in
    /// memory is the same): false, each run from its own start, the runs
    /// initialised one after another; true, `first + stage` of one array,
    /// initialised stage by stage. Each is what its kernel emitted before
    /// the pipeline was shared (true: the GEMM), which kept the generated
    /// code byte-identical; either is right.
    bool arrayIndexed = false;
  };

  /// The pipeline over `barrierCount(config)` mbarriers at shared address
  /// `barriers` (i64).
  TmaPipeline(mlir::ImplicitLocOpBuilder &b, mlir::Value barriers,
              Config config)
      : b(b), barriers(barriers), config(config) {}

  static int64_t barrierCount(const Config &config) {
    return config.once + (config.loads + 1) * config.stages;
  }

  /// Initialises every barrier (arrivals: 1, or the consumers for the
  /// empty ones): one thread, before a barrier of the whole block.
  void init();

  /// The barriers (!llvm.ptr<3>): once-barrier `i`, full barrier `load` of
  /// `stage`, and the empty barrier of `stage`.
  mlir::Value onceBarrier(int64_t i);
  mlir::Value full(mlir::Value stage, int64_t load = 0) {
    return barrier(config.once + load * config.stages, stage);
  }
  mlir::Value empty(mlir::Value stage) {
    return barrier(config.once + config.loads * config.stages, stage);
  }

  /// The producer's side of iteration `i`: waits until the consumers freed
  /// its stage, then arms a full barrier with the bytes its copies bring.
  PipelineState producerState(mlir::Value i);
  void producerAcquire(const PipelineState &state);
  void expectBytes(mlir::Value full, int64_t bytes);

  /// The consumers' side of iteration `i`: waits for full barrier `load`
  /// of its stage, and frees the stage (one thread per consumer warpgroup).
  PipelineState consumerState(mlir::Value i);
  void consumerWait(const PipelineState &state, int64_t load = 0);
  void consumerRelease(mlir::Value stage);

private:
  /// Barrier `first + stage`.
  mlir::Value barrier(int64_t first, mlir::Value stage);
  mlir::Value idx(int64_t v) {
    return mlir::arith::ConstantIndexOp::create(b, v);
  }
  mlir::Value i32(int64_t v) {
    return mlir::arith::ConstantIntOp::create(b, b.getI32Type(), v);
  }

  mlir::ImplicitLocOpBuilder &b;
  mlir::Value barriers;
  Config config;
};

/// Registers per thread (setmaxnreg) of the producer warpgroup and of each
/// consumer warpgroup.
struct WarpgroupRegisters {
  int64_t producer, consumer;
};

/// A consumer thread: its index among the consumers' threads, its
/// warpgroup among theirs, and whether it leads it (its first thread).
struct ConsumerThread {
  mlir::Value tid, warpgroup, leader;
};

/// Warp specialisation of a block of threads `tid`: thread 0 of warpgroup 0
/// runs `producer`, every lane of its warp 1 runs `helper` (if any), and the
/// other warpgroups go on at the insertion point this leaves (the caller
/// restores it); with `registers`, each side first moves to its share of
/// the registers.
ConsumerThread splitWarpgroups(mlir::ImplicitLocOpBuilder &b, mlir::Value tid,
                               std::optional<WarpgroupRegisters> registers,
                               llvm::function_ref<void()> producer,
                               llvm::function_ref<void()> helper = nullptr);

} // namespace fusec::tiling

#endif // FUSEC_LIB_CONVERSION_FUSETOGPU_PIPELINE_H
