//===- Autodiff.cpp - Forward and backward functions of a graph -----------===//
//
// Reverse-mode differentiation of a graph function (contract in
// fusec/Transforms/Autodiff.h). Ops are visited last to first; each op on a
// path from a differentiated argument to a differentiable result builds its
// operands' gradients through its GradientOpInterface rule.
//
// Save or recompute: a rule asks for forward values through
// GradientBuilder::forward. Arguments are passed to the backward as they
// are. An elementwise op, a view, a reshape or a cast is recomputed inside
// the backward when each of its operands is already at hand there (an
// argument, a saved tensor, or recomputable the same way), so recomputing
// never makes the forward save more; fusion then computes it inside the
// backward kernels that read it. A result of the graph is read again where
// the caller holds it (saving it too would cost the forward a copy).
// Anything else is saved: it becomes an extra result of the forward. Each
// decision is a remark at the op, and the forward's bytes saved are a remark at
// the function.
//
//===----------------------------------------------------------------------===//

#include "fusec/Transforms/Autodiff.h"
#include "fusec/Transforms/Passes.h"

#include "Fuse/FuseOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace fusec {
#define GEN_PASS_DEF_FUSECAUTODIFF
#include "fusec/Transforms/Passes.h.inc"
} // namespace fusec

using namespace mlir;
using namespace mlir::fuse;
using fusec::GradientFunctions;

static int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// Which values carry a gradient: those that depend, through
/// differentiable operands and results, on an argument in `wrt`.
static llvm::DenseSet<Value> activeValues(func::FuncOp f,
                                          ArrayRef<unsigned> wrt) {
  llvm::DenseSet<Value> active;
  for (unsigned i : wrt)
    active.insert(f.getArgument(i));
  f.walk([&](Operation *op) {
    auto rule = dyn_cast<GradientOpInterface>(op);
    bool in = false;
    for (OpOperand &operand : op->getOpOperands())
      if (active.contains(operand.get()) &&
          (!rule || rule.isDifferentiableOperand(operand.getOperandNumber())))
        in = true;
    if (!in)
      return;
    for (OpResult result : op->getResults())
      if (!rule || rule.isDifferentiableResult(result.getResultNumber()))
        active.insert(result);
  });
  return active;
}

/// Which values a gradient of a differentiable result flows back to.
static llvm::DenseSet<Value> usefulValues(func::FuncOp f,
                                          const llvm::DenseSet<Value> &active) {
  llvm::DenseSet<Value> useful;
  Operation *ret = f.getBody().front().getTerminator();
  for (Value v : ret->getOperands())
    if (active.contains(v))
      useful.insert(v);
  SmallVector<Operation *> ops;
  f.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops)) {
    if (!llvm::any_of(op->getResults(),
                      [&](Value r) { return useful.contains(r); }))
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    for (OpOperand &operand : op->getOpOperands())
      if (active.contains(operand.get()) &&
          (!rule || rule.isDifferentiableOperand(operand.getOperandNumber())))
        useful.insert(operand.get());
  }
  return useful;
}

namespace {
/// Builds the backward function; the GradientBuilder rules see.
class Differentiator : public GradientBuilder {
public:
  Differentiator(func::FuncOp f, OpBuilder &b, bool ordered)
      : f(f), b(b), loc_(f.getLoc()), ordered(ordered) {}

  OpBuilder &builder() override { return b; }
  Location loc() override { return loc_; }
  Value gradient(Value result) override { return grads.lookup(result); }
  bool wanted(Value operand) override { return useful.contains(operand); }
  bool deterministic() override { return ordered; }

  void accumulate(Value operand, Value grad) override {
    if (!grad)
      return;
    if (grad.getType() != operand.getType()) {
      emitError(loc_) << "fusec-autodiff: the gradient rule of this op built "
                         "a gradient of "
                      << grad.getType() << " for an operand of "
                      << operand.getType();
      failedRule = true;
      return;
    }
    Value &sum = grads[operand];
    sum = sum ? AddOp::create(b, loc_, sum, grad).getResult() : grad;
  }

  Value forward(Value value) override {
    if (Value known = mapped.lookup(value))
      return known;
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      Value v = body->addArgument(value.getType(), arg.getLoc());
      forwardArgs.insert({arg.getArgNumber(), v});
      return mapped[value] = v;
    }
    if (Value again = recompute(value))
      return again;
    Operation *def = value.getDefiningOp();
    Operation *ret = f.getBody().front().getTerminator();
    for (OpOperand &use : ret->getOpOperands()) {
      if (use.get() != value)
        continue;
      emitRemark(def->getLoc())
          << "read result #" << cast<OpResult>(value).getResultNumber()
          << " of " << def->getName()
          << " in the backward from the graph's result #"
          << use.getOperandNumber() << " (not saved)";
      Value v = body->addArgument(value.getType(), def->getLoc());
      forwardResults.insert({use.getOperandNumber(), v});
      return mapped[value] = v;
    }
    emitRemark(def->getLoc())
        << "saved result #" << cast<OpResult>(value).getResultNumber()
        << " of " << def->getName() << " for the backward ("
        << bytesOf(value) << " bytes)";
    Value v = body->addArgument(value.getType(), def->getLoc());
    saved.insert({value, v});
    return mapped[value] = v;
  }

  LogicalResult run(ArrayRef<unsigned> wrt, GradientFunctions &out);

private:
  /// Whether `value` can be recomputed from values the backward already
  /// has, without saving anything new.
  bool recomputable(Value value, unsigned depth = 0) {
    if (mapped.count(value) || isa<BlockArgument>(value))
      return true;
    Operation *def = value.getDefiningOp();
    if (depth > 16 || !def || def->getNumRegions() ||
        !(isElementwise(def) || isView(def) || isa<ReshapeOp, CastOp>(def)))
      return false;
    return llvm::all_of(def->getOperands(), [&](Value operand) {
      return recomputable(operand, depth + 1);
    });
  }

  Value recompute(Value value) {
    if (!recomputable(value))
      return {};
    Operation *def = value.getDefiningOp();
    IRMapping map;
    for (Value operand : def->getOperands())
      map.map(operand, forward(operand));
    Operation *copy = b.clone(*def, map);
    for (auto [old, now] : llvm::zip(def->getResults(), copy->getResults()))
      mapped[old] = now;
    emitRemark(def->getLoc())
        << "recomputed " << def->getName() << " in the backward";
    return mapped.lookup(value);
  }

  func::FuncOp f;
  OpBuilder &b;
  Location loc_;
  bool ordered;
  Block *body = nullptr;
  llvm::DenseSet<Value> useful;
  llvm::DenseMap<Value, Value> grads;
  /// Forward value -> its backward value (argument, saved or recomputed).
  llvm::DenseMap<Value, Value> mapped;
  llvm::MapVector<unsigned, Value> forwardArgs;
  /// The graph's results the backward reads, by result index.
  llvm::MapVector<unsigned, Value> forwardResults;
  llvm::MapVector<Value, Value> saved;
  bool failedRule = false;
};
} // namespace

LogicalResult Differentiator::run(ArrayRef<unsigned> wrtIn,
                                  GradientFunctions &out) {
  SmallVector<unsigned> wrt(wrtIn);
  unsigned numArgs = f.getNumArguments();
  for (unsigned i : wrt)
    if (i >= numArgs)
      return emitError(loc_) << "fusec-autodiff: argument #" << i
                             << " does not exist; @" << f.getSymName()
                             << " has " << numArgs;
  bool everyArg = wrt.empty();
  if (everyArg)
    wrt = llvm::to_vector(llvm::seq<unsigned>(0, numArgs));
  // Ops whose rules read results the forward does not return yet (an
  // attention's log-sum-exp) take their training form first.
  SmallVector<GradientOpInterface> rules;
  f.walk([&](GradientOpInterface op) { rules.push_back(op); });
  for (GradientOpInterface op : rules)
    (void)op.prepareForGradient();
  llvm::DenseSet<Value> active = activeValues(f, wrt);
  useful = usefulValues(f, active);
  if (everyArg)
    llvm::erase_if(wrt, [&](unsigned i) {
      return !useful.contains(f.getArgument(i));
    });
  for (unsigned i : wrt)
    if (!useful.contains(f.getArgument(i)))
      return emitError(f.getArgument(i).getLoc())
             << "fusec-autodiff: argument #" << i << " of @" << f.getSymName()
             << " reaches no differentiable result";
  if (wrt.empty())
    return emitError(loc_) << "fusec-autodiff: no argument of @"
                           << f.getSymName()
                           << " reaches a differentiable result";

  // The backward, its arguments added as rules ask for them and ordered at
  // the end.
  MLIRContext *ctx = f.getContext();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(f);
  std::string name = f.getSymName().str();
  auto backward = func::FuncOp::create(b, loc_, name + "_backward",
                                       FunctionType::get(ctx, {}, {}));
  body = backward.addEntryBlock();
  b.setInsertionPointToStart(body);
  Operation *ret = f.getBody().front().getTerminator();
  SmallVector<unsigned> gradResults;
  SmallVector<Value> resultGrads;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    if (!active.contains(v))
      continue;
    gradResults.push_back(i);
    Value g = body->addArgument(v.getType(), v.getLoc());
    resultGrads.push_back(g);
    Value &sum = grads[v];
    sum = sum ? AddOp::create(b, loc_, sum, g).getResult() : g;
  }

  SmallVector<Operation *> ops;
  f.walk([&](Operation *op) {
    if (op != ret)
      ops.push_back(op);
  });
  for (Operation *op : llvm::reverse(ops)) {
    bool reached = llvm::any_of(op->getResults(),
                                [&](Value r) { return grads.count(r); });
    bool needed = llvm::any_of(op->getOperands(),
                               [&](Value v) { return useful.contains(v); });
    if (!reached || !needed)
      continue;
    auto rule = dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError() << "fusec-autodiff: " << op->getName()
                             << " has no gradient rule";
    loc_ = op->getLoc();
    if (failed(rule.buildGradient(*this)) || failedRule)
      return failure();
  }
  loc_ = f.getLoc();

  SmallVector<Value> results;
  for (unsigned i : wrt) {
    Value g = grads.lookup(f.getArgument(i));
    if (!g)
      return emitError(loc_) << "fusec-autodiff: no gradient reached argument #"
                             << i;
    results.push_back(g);
  }
  func::ReturnOp::create(b, loc_, results);
  SmallVector<Type> resultTypes(ValueRange(results).getTypes());

  // Arguments in contract order: forward arguments and results (each by
  // index), saved, the results' gradients.
  SmallVector<Value> order;
  auto byIndex = [&](llvm::MapVector<unsigned, Value> &values) {
    llvm::sort(values, [](auto &l, auto &r) { return l.first < r.first; });
    SmallVector<int64_t> indices;
    for (auto &[index, v] : values) {
      indices.push_back(index);
      order.push_back(v);
    }
    return indices;
  };
  SmallVector<int64_t> forwardArgIndices = byIndex(forwardArgs);
  SmallVector<int64_t> forwardResultIndices = byIndex(forwardResults);
  for (auto &entry : saved)
    order.push_back(entry.second);
  llvm::append_range(order, resultGrads);
  unsigned old = body->getNumArguments();
  for (Value v : order) {
    Value now = body->addArgument(v.getType(), v.getLoc());
    v.replaceAllUsesWith(now);
  }
  body->eraseArguments(0, old);
  backward.setFunctionType(
      FunctionType::get(ctx, body->getArgumentTypes(), resultTypes));

  // The forward: f's results, then the saved tensors.
  b.setInsertionPoint(f);
  auto fwd = cast<func::FuncOp>(b.clone(*f));
  fwd.setSymName(name + "_forward");
  Operation *fwdRet = fwd.getBody().front().getTerminator();
  // Values of f map onto the clone by position.
  IRMapping map;
  {
    SmallVector<Operation *> fwdOps;
    fwd.walk([&](Operation *op) { fwdOps.push_back(op); });
    SmallVector<Operation *> fOps;
    f.walk([&](Operation *op) { fOps.push_back(op); });
    for (auto [a, c] : llvm::zip_equal(fOps, fwdOps))
      map.map(a->getResults(), c->getResults());
    map.map(f.getArguments(), fwd.getArguments());
  }
  SmallVector<Value> fwdResults(fwdRet->getOperands());
  int64_t savedBytes = 0;
  for (auto &entry : saved) {
    fwdResults.push_back(map.lookup(entry.first));
    savedBytes += bytesOf(entry.first);
  }
  fwdRet->setOperands(fwdResults);
  fwd.setFunctionType(FunctionType::get(ctx, fwd.getArgumentTypes(),
                                        ValueRange(fwdResults).getTypes()));

  Builder attrs(ctx);
  fwd->setAttr(fusec::kNumResultsAttr,
               attrs.getI64IntegerAttr(ret->getNumOperands()));
  fwd->setAttr(fusec::kBackwardAttr, attrs.getStringAttr(backward.getSymName()));
  backward->setAttr(fusec::kForwardAttr, attrs.getStringAttr(fwd.getSymName()));
  backward->setAttr(fusec::kForwardArgsAttr,
                    attrs.getDenseI64ArrayAttr(forwardArgIndices));
  backward->setAttr(fusec::kForwardResultsAttr,
                    attrs.getDenseI64ArrayAttr(forwardResultIndices));
  backward->setAttr(fusec::kNumSavedAttr,
                    attrs.getI64IntegerAttr(saved.size()));
  backward->setAttr(
      fusec::kGradResultsAttr,
      attrs.getDenseI64ArrayAttr(llvm::to_vector_of<int64_t>(gradResults)));
  backward->setAttr(fusec::kWrtAttr, attrs.getDenseI64ArrayAttr(
                                         llvm::to_vector_of<int64_t>(wrt)));
  backward->moveAfter(fwd);
  InFlightDiagnostic remark = emitRemark(f.getLoc())
                              << "@" << name << ": the forward saves "
                              << saved.size() << " tensors (" << savedBytes
                              << " bytes) for the backward";
  if (!forwardResults.empty())
    remark << "; the backward reads " << forwardResults.size()
           << " of its results again";
  out = {fwd, backward, savedBytes};
  return success();
}

FailureOr<fusec::GradientFunctions> fusec::differentiate(func::FuncOp f,
                                                         ArrayRef<unsigned> wrt,
                                                         bool deterministic) {
  OpBuilder b(f.getContext());
  Differentiator d(f, b, deterministic);
  GradientFunctions out;
  if (failed(d.run(wrt, out))) {
    // Leave the module as it was.
    for (StringRef suffix : {"_backward", "_forward"})
      if (Operation *made = SymbolTable::lookupNearestSymbolFrom(
              f, b.getStringAttr(f.getSymName().str() + suffix.str())))
        made->erase();
    return failure();
  }
  f.erase();
  return out;
}

namespace {
struct AutodiffPass : fusec::impl::FusecAutodiffBase<AutodiffPass> {
  using FusecAutodiffBase::FusecAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp f;
    if (!func.empty()) {
      f = module.lookupSymbol<func::FuncOp>(func);
      if (!f) {
        module.emitError() << "fusec-autodiff: no function @" << func;
        return signalPassFailure();
      }
    } else {
      for (auto candidate : module.getOps<func::FuncOp>()) {
        if (candidate.isDeclaration())
          continue;
        if (f) {
          candidate.emitError()
              << "fusec-autodiff: the module has several functions; name "
                 "one with func=";
          return signalPassFailure();
        }
        f = candidate;
      }
      if (!f) {
        module.emitError() << "fusec-autodiff: the module has no function";
        return signalPassFailure();
      }
    }
    SmallVector<unsigned> args(wrt.begin(), wrt.end());
    if (failed(fusec::differentiate(f, args, deterministic)))
      signalPassFailure();
  }
};
} // namespace
