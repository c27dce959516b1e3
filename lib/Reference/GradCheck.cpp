//===- GradCheck.cpp - Finite-difference check of gradient rules ----------===//

#include "fusec/Reference/GradCheck.h"
#include "fusec/Reference/Inputs.h"
#include "fusec/Reference/Interpreter.h"
#include "fusec/Transforms/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace mlir;
using namespace fusec;
using namespace fusec::ref;

/// The function to check: `name`, or the module's only definition.
static func::FuncOp findFunction(ModuleOp module, StringRef name) {
  if (!name.empty()) {
    auto f = module.lookupSymbol<func::FuncOp>(name);
    if (!f)
      module.emitError() << "fusec-gradcheck: no function @" << name;
    return f;
  }
  func::FuncOp found;
  for (auto f : module.getOps<func::FuncOp>()) {
    if (f.isDeclaration())
      continue;
    if (found) {
      f.emitError() << "fusec-gradcheck: the module has several functions; "
                       "name one with --func";
      return {};
    }
    found = f;
  }
  if (!found)
    module.emitError() << "fusec-gradcheck: the module has no function";
  return found;
}

/// sum_i <dy_i, y_i> over the results that have a gradient.
static double project(ArrayRef<Tensor> results, ArrayRef<int64_t> gradResults,
                      ArrayRef<Tensor> dys) {
  double sum = 0;
  for (auto [index, dy] : llvm::zip_equal(gradResults, dys)) {
    const Tensor &y = results[index];
    for (size_t j = 0; j < dy.data.size(); ++j)
      sum += dy.data[j] * y.data[j];
  }
  return sum;
}

LogicalResult fusec::ref::gradCheck(ModuleOp module,
                                    const GradCheckOptions &options,
                                    raw_ostream &os,
                                    std::vector<ArgumentError> *errorsOut) {
  func::FuncOp f = findFunction(module, options.func);
  if (!f || failed(verifyGraph(f)))
    return failure();
  std::string name = f.getSymName().str();

  // The pair, built on a copy so that `f` stays to be evaluated.
  OwningOpRef<ModuleOp> copy = module.clone();
  auto fCopy = copy->lookupSymbol<func::FuncOp>(name);
  FailureOr<GradientFunctions> pair = differentiate(fCopy, options.wrt);
  if (failed(pair))
    return failure();
  func::FuncOp fwd = pair->forward, bwd = pair->backward;
  if (options.printPair)
    os << *copy << "\n";
  auto ints = [](Operation *op, StringRef attr) {
    return llvm::to_vector(cast<DenseI64ArrayAttr>(op->getAttr(attr)).asArrayRef());
  };
  SmallVector<int64_t> forwardArgs = ints(bwd, kForwardArgsAttr);
  SmallVector<int64_t> gradResults = ints(bwd, kGradResultsAttr);
  SmallVector<int64_t> wrt = ints(bwd, kWrtAttr);
  int64_t numResults =
      cast<IntegerAttr>(fwd->getAttr(kNumResultsAttr)).getInt();

  // Random inputs, and output gradients from a second stream of the seed.
  std::vector<Tensor> x = randomInputs(f, options.seed);
  std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<Tensor> dys;
  for (int64_t index : gradResults) {
    auto type = cast<RankedTensorType>(f.getResultTypes()[index]);
    Tensor dy(std::vector<int64_t>(type.getShape().begin(),
                                   type.getShape().end()));
    for (double &v : dy.data)
      v = dist(rng);
    dys.push_back(std::move(dy));
  }

  // Forward, then backward on its arguments, saved tensors and dy.
  FailureOr<std::vector<Tensor>> y = evaluate(fwd, x, /*roundResults=*/false);
  if (failed(y))
    return failure();
  std::vector<Tensor> bwdInputs;
  for (int64_t i : forwardArgs)
    bwdInputs.push_back(x[i]);
  for (int64_t i : ints(bwd, kForwardResultsAttr))
    bwdInputs.push_back((*y)[i]);
  for (size_t i = numResults; i < y->size(); ++i)
    bwdInputs.push_back((*y)[i]);
  llvm::append_range(bwdInputs, dys);
  FailureOr<std::vector<Tensor>> grads =
      evaluate(bwd, bwdInputs, /*roundResults=*/false);
  if (failed(grads))
    return failure();

  // Central differences of the projection, element by element.
  bool ok = true;
  std::vector<ArgumentError> errors;
  for (auto [k, arg] : llvm::enumerate(wrt)) {
    const Tensor &g = (*grads)[k];
    ArgumentError e;
    e.arg = arg;
    double scale = 0;
    std::vector<double> fd(g.data.size());
    for (size_t j = 0; j < g.data.size(); ++j) {
      std::vector<Tensor> xs = x;
      double at = xs[arg].data[j];
      double value[2];
      for (int side = 0; side < 2; ++side) {
        xs[arg].data[j] = at + (side ? -options.eps : options.eps);
        FailureOr<std::vector<Tensor>> r =
            evaluate(f, xs, /*roundResults=*/false);
        if (failed(r))
          return failure();
        value[side] = project(*r, gradResults, dys);
      }
      fd[j] = (value[0] - value[1]) / (2 * options.eps);
      scale = std::max({scale, std::abs(fd[j]), std::abs(g.data[j])});
    }
    for (size_t j = 0; j < g.data.size(); ++j) {
      double err = std::abs(fd[j] - g.data[j]);
      if (!(err <= e.maxAbs)) {
        e.maxAbs = err;
        e.worst = j;
      }
    }
    e.maxRel = scale > 0 ? e.maxAbs / scale : e.maxAbs;
    bool pass = e.maxRel <= options.tolerance;
    ok &= pass;
    os << llvm::formatv("@{0} argument #{1} {2}: max abs error {3:e2}, max "
                        "rel error {4:e2}{5}\n",
                        name, arg, f.getArgumentTypes()[arg], e.maxAbs,
                        e.maxRel,
                        pass ? ""
                             : llvm::formatv(" (element {0}: backward {1:e6}, "
                                             "finite difference {2:e6})",
                                             e.worst, g.data[e.worst],
                                             fd[e.worst])
                                   .str());
    errors.push_back(e);
  }
  os << llvm::formatv("@{0}: {1} ({2} arguments, tolerance {3:e2})\n", name,
                      ok ? "PASS" : "FAIL", wrt.size(), options.tolerance);
  if (errorsOut)
    *errorsOut = std::move(errors);
  return success(ok);
}
