//===- fusec-gradcheck.cpp - Finite-difference check of a graph's gradients ===//
//
// fusec-gradcheck graph.mlir [--func f] [--wrt 0,2] [--seed N] [--eps E]
//                            [--tolerance T] [--print-pair]
//
// Runs fusec-autodiff on the graph and checks the backward against central
// finite differences in float64 (fusec/Reference/GradCheck.h): one line per
// differentiated argument with its largest absolute and relative error,
// then PASS or FAIL; the exit status is 1 on FAIL or any error.
//
//===----------------------------------------------------------------------===//

#include "fusec/Reference/GradCheck.h"

#include "Fuse/FuseDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;

static llvm::cl::opt<std::string> inputFilename(llvm::cl::Positional,
                                                llvm::cl::desc("<graph.mlir>"),
                                                llvm::cl::init("-"));
static llvm::cl::opt<std::string>
    funcName("func", llvm::cl::desc("the function to check (default: the "
                                    "only one)"));
static llvm::cl::list<unsigned>
    wrt("wrt", llvm::cl::CommaSeparated,
        llvm::cl::desc("arguments to differentiate (default: every one a "
                       "gradient reaches)"));
static llvm::cl::opt<uint64_t> seed("seed", llvm::cl::init(1),
                                    llvm::cl::desc("random seed"));
static llvm::cl::opt<double> eps("eps", llvm::cl::init(1e-6),
                                 llvm::cl::desc("finite-difference step"));
static llvm::cl::opt<double>
    tolerance("tolerance", llvm::cl::init(1e-6),
              llvm::cl::desc("largest relative error accepted"));
static llvm::cl::opt<bool>
    printPair("print-pair",
              llvm::cl::desc("print the forward/backward pair checked"));
static llvm::cl::opt<bool> showRemarks(
    "remarks", llvm::cl::desc("print fusec-autodiff's save/recompute remarks"));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "fusec-gradcheck: gradients against finite differences\n");

  // Graphs are fuse ops in a func.func: no need for the whole pipeline's
  // registrations (fusec::registerAll).
  DialectRegistry registry;
  registry.insert<fuse::FuseDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  context.getDiagEngine().registerHandler([](Diagnostic &diag) {
    return success(!showRemarks &&
                   diag.getSeverity() == DiagnosticSeverity::Remark);
  });

  std::string error;
  auto file = openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << "fusec-gradcheck: " << error << "\n";
    return 1;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  fusec::ref::GradCheckOptions options;
  options.func = funcName;
  options.wrt.assign(wrt.begin(), wrt.end());
  options.seed = seed;
  options.eps = eps;
  options.tolerance = tolerance;
  options.printPair = printPair;
  return failed(fusec::ref::gradCheck(*module, options, llvm::outs())) ? 1 : 0;
}
