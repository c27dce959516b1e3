//===- SelectKernelConfig.cpp - fusec-select-kernel-config ----------------===//
//
// Writes each fuse.kernel's #fuse.kernel_config (fusec.kernel_config): its
// own tile attribute wins, then the tuning database's entry for its
// signature, then the heuristic; each choice is a remark at the kernel.
// fusec-tile-kernels reads the config and nothing else of the selection.
//
//===----------------------------------------------------------------------===//

#include "fusec/Conversion/Passes.h"

#include "Strategy.h"

#include "fusec/Conversion/AttrNames.h"
#include "fusec/Tuning/TuningDB.h"

namespace fusec {
#define GEN_PASS_DEF_SELECTKERNELCONFIG
#include "fusec/Conversion/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace mlir::fuse;
using namespace fusec;
using namespace fusec::tiling;

namespace {
/// What the selection looks kernels up in.
struct Tuning {
  tuning::Database db;
  std::string chip, gpu, fp32Math;
};
} // namespace

/// The #fuse.tile a database entry names.
static TileAttr tileOf(MLIRContext *context, const tuning::Entry &entry) {
  auto get = [&](llvm::StringRef key) -> int64_t {
    auto it = entry.tile.find(key.str());
    return it == entry.tile.end() ? 0 : it->second;
  };
  return TileAttr::get(context, get("bm"), get("bn"), get("bk"), get("tm"),
                       get("tn"), get("warps_m"), get("warps_n"), get("stages"),
                       get("warps_k"));
}

/// The config `entry` names, where it suits the kernel and selects the
/// family it was measured with; else a warning and failure.
static FailureOr<KernelConfigAttr> fromEntry(const KernelQuery &query,
                                             const tuning::Entry &entry) {
  KernelOp kernel = query.kernel;
  FailureOr<KernelConfigAttr> config;
  std::string why;
  {
    // The entry's tile must pass every check a written one would.
    ScopedDiagnosticHandler capture(kernel.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      why = d.str();
      return success();
    });
    config = selectConfig(query, tileOf(kernel.getContext(), entry),
                          "tuning database (" + entry.gpu + ")");
  }
  if (succeeded(config) &&
      stringifyKernelFamily(config->getFamily()) == entry.family)
    return config;
  kernel.emitWarning("ignoring the tuning database's entry for kernel '")
      << kernel.getName() << "' (" << entry.family
      << "): " << (why.empty() ? "it selects another family" : why)
      << "; using the heuristic";
  return failure();
}

/// The kernel's config: its own tile's, the database's, or the heuristic's.
static FailureOr<KernelConfigAttr> selectFor(const KernelQuery &query,
                                             const Tuning &tuning) {
  KernelOp kernel = query.kernel;
  if (TileAttr tile = kernel.getTileAttr())
    return selectConfig(query, tile, "tile attribute");
  std::string signature =
      tuning::kernelSignature(kernel, tuning.chip, tuning.fp32Math);
  if (const tuning::Entry *entry =
          tuning.db.lookup(signature, tuning.chip, tuning.gpu))
    if (FailureOr<KernelConfigAttr> config = fromEntry(query, *entry);
        succeeded(config))
      return config;
  return selectConfig(query, {}, "heuristic");
}

/// Writes the config of every kernel of `module`; fails at the first
/// kernel none fits.
static LogicalResult selectAll(ModuleOp module, const TilingTarget &parsed,
                               const Tuning &tuning) {
  WalkResult result = module.walk([&](KernelOp kernel) {
    KernelQuery query(kernel, parsed.target, parsed.options);
    FailureOr<KernelConfigAttr> config = selectFor(query, tuning);
    if (failed(config))
      return WalkResult::interrupt();
    // At the kernel's location, not op->emitRemark(), which would print the
    // whole kernel.
    InFlightDiagnostic remark = emitRemark(kernel.getLoc());
    remark << "kernel '" << kernel.getName()
           << "': " << stringifyKernelFamily(config->getFamily());
    if (Attribute tile = config->getTile())
      remark << " " << tile;
    remark << ", from the " << config->getSource();
    kernel->setAttr(kKernelConfigAttr, *config);
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

namespace {
struct SelectKernelConfigPass
    : fusec::impl::SelectKernelConfigBase<SelectKernelConfigPass> {
  using Base::Base;

  void runOnOperation() override {
    FailureOr<TilingTarget> parsed =
        parseTilingTarget(getOperation(), arch, smCount, fp32Math);
    if (failed(parsed))
      return signalPassFailure();
    Tuning tuning{{}, parsed->target.chip, tuningGpu, fp32Math};
    if (!tuningDb.empty() && tuningDb != "none") {
      std::vector<std::string> warnings;
      tuning.db = tuning::Database::load(tuningDb, warnings);
      for (const std::string &warning : warnings)
        getOperation().emitWarning(warning);
    }
    if (failed(selectAll(getOperation(), *parsed, tuning)))
      signalPassFailure();
  }
};
} // namespace
