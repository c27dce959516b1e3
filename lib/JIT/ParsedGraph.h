//===- ParsedGraph.h - A graph text parsed for the JIT library --*- C++ -*-===//
//
// Private to the JIT library: compile(), evaluate() and tune() take graph
// text, and each parses it here in an MLIR context of its own, with its
// diagnostics kept as text located in the graph.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_LIB_JIT_PARSEDGRAPH_H
#define FUSEC_LIB_JIT_PARSEDGRAPH_H

#include "fusec/InitAll.h"
#include "fusec/Pipelines/Pipelines.h"
#include "fusec/Reference/Interpreter.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace fusec::jit::detail {

/// A graph parsed and verified in a context of its own (callers compile
/// several graphs at once), its entry picked; diagnostics land in `errors`,
/// located in the graph's text. The contexts share one thread pool, a thread
/// per core, which the code generation of a graph's kernels runs on.
class ParsedGraph {
public:
  ParsedGraph() { context.setThreadPool(threadPool()); }

  /// Empty on success, else the errors.
  std::string parse(const std::string &mlir, const std::string &name,
                    const std::string &entryName) {
    context.printOpOnDiagnostic(false);
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(mlir, name), llvm::SMLoc());
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
    if (!module)
      return errors;
    for (mlir::func::FuncOp func : module->getOps<mlir::func::FuncOp>())
      if (mlir::failed(ref::verifyGraph(func)))
        return errors;
    std::string problem;
    entry = selectEntry(*module, entryName,
                        "name the one to use (the entry option)", problem);
    if (!entry)
      return name + ": error: " + problem + "\n";
    return "";
  }

  /// The errors so far, or `otherwise` when there are none.
  std::string failure(const std::string &otherwise) {
    return errors.empty() ? otherwise : errors;
  }

  /// The diagnostics so far, forgotten here: the tuner reports them as
  /// they come.
  std::string takeDiagnostics() {
    std::string text = std::move(errors);
    errors.clear();
    return text;
  }

  mlir::MLIRContext context{registry(), mlir::MLIRContext::Threading::DISABLED};
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp entry;

private:
  static llvm::ThreadPoolInterface &threadPool() {
    static llvm::DefaultThreadPool pool;
    return pool;
  }

  static const mlir::DialectRegistry &registry() {
    static const mlir::DialectRegistry registry = [] {
      mlir::DialectRegistry r;
      registerAll(r);
      return r;
    }();
    return registry;
  }

  std::string errors;
  llvm::raw_string_ostream errorStream{errors};
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics{sourceMgr, &context,
                                               errorStream};
  // Registered last, so it sees diagnostics first: remarks are dropped.
  mlir::DiagnosticEngine::HandlerID dropRemarks =
      context.getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
        return mlir::success(diag.getSeverity() ==
                             mlir::DiagnosticSeverity::Remark);
      });
};

} // namespace fusec::jit::detail

#endif // FUSEC_LIB_JIT_PARSEDGRAPH_H
