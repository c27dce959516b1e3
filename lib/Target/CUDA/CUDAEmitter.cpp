//===- CUDAEmitter.cpp - Tiled kernels as CUDA C --------------------------===//
//
// The emitter (names, types, literals, statements), the dispatch to each
// op's printer, scf control flow, kernels and the translation unit with its
// prelude. CUDAEmitter.h describes the layout and the numerics contract.
//
//===----------------------------------------------------------------------===//

#include "CUDAEmitter.h"

#include "Fuse/FuseDialect.h"
#include "fusec/Conversion/AttrNames.h"
#include "fusec/Target/Artifact.h"
#include "fusec/Target/CUDA.h"
#include "fusec/Target/TargetDescription.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/SaveAndRestore.h"

using namespace mlir;
using namespace fusec;
using namespace fusec::cuda;

//===----------------------------------------------------------------------===//
// Names, types and literals
//===----------------------------------------------------------------------===//

std::string Emitter::define(Value v) {
  std::string name = identifier(v);
  for (unsigned i = 1; !names.insert(name).second; ++i)
    name = identifier(v) + "_" + std::to_string(i);
  return exprs[v] = name;
}

std::string Emitter::expr(Value v) {
  auto it = exprs.find(v);
  if (it != exprs.end())
    return it->second;
  // A result no statement defines (a shuffle's validity, an async token):
  // the kernel fails once printed, at this value.
  if (!undefined)
    undefined = v;
  return "/*undefined*/";
}

std::string Emitter::identifier(Value v) {
  std::string text;
  llvm::raw_string_ostream asmName(text);
  v.printAsOperand(asmName, state);
  std::string name;
  for (char c : StringRef(text).drop_front())
    name += llvm::isAlnum(c) ? c : '_';
  if (name.empty() || llvm::isDigit(name[0]))
    name = "v" + name;
  // Asm names are free-form (%true, %min): keep off C's and CUDA's names.
  static const llvm::StringSet<> reserved = {
      "auto",      "bool",     "break",    "case",    "char",    "const",
      "continue",  "default",  "do",       "double",  "else",    "false",
      "float",     "for",      "if",       "int",     "long",    "return",
      "short",     "signed",   "static",   "switch",  "true",    "unsigned",
      "void",      "volatile", "while",    "asm",     "min",     "max",
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"};
  if (reserved.contains(name) || StringRef(name).starts_with("fusec_") ||
      StringRef(name).starts_with("__"))
    name += "_";
  return name;
}

std::string Emitter::scalarTypeName(Type type) {
  if (type.isF32())
    return "float";
  if (type.isF64())
    return "double";
  if (type.isF16()) {
    helpers.insert(Helper::Half);
    return "fusec_half";
  }
  if (type.isBF16()) {
    helpers.insert(Helper::BFloat16);
    return "fusec_bfloat16";
  }
  if (isa<IndexType>(type))
    return indexBits == 64 ? "long long" : "int";
  if (auto integer = dyn_cast<IntegerType>(type)) {
    switch (integer.getWidth()) {
    case 1:
      return "bool";
    case 8:
      return "signed char";
    case 16:
      return "short";
    case 32:
      return "int";
    case 64:
      return "long long";
    }
  }
  return "";
}

std::string Emitter::unsignedTypeName(Type type) {
  switch (bitWidth(type)) {
  case 1:
    return "bool";
  case 8:
    return "unsigned char";
  case 16:
    return "unsigned short";
  case 32:
    return "unsigned";
  default:
    return "unsigned long long";
  }
}

FailureOr<std::string> Emitter::typeName(Type type, Operation *op) {
  std::string name = scalarTypeName(type);
  if (!name.empty())
    return name;
  if (auto vector = dyn_cast<VectorType>(type)) {
    if (vector.getRank() > 0 && !vector.isScalable()) {
      name = scalarTypeName(vector.getElementType());
      if (!name.empty()) {
        helpers.insert(Helper::Vec);
        for (int64_t dim : llvm::reverse(vector.getShape()))
          name = "fusec_vec<" + name + ", " + std::to_string(dim) + ">";
        return name;
      }
    }
  } else if (auto structType = dyn_cast<LLVM::LLVMStructType>(type)) {
    // Only homogeneous structs occur: MMA fragments and accumulators.
    ArrayRef<Type> body = structType.getBody();
    if (!body.empty() && llvm::all_equal(body)) {
      FailureOr<std::string> element = typeName(body.front(), op);
      if (failed(element))
        return failure();
      helpers.insert(Helper::Array);
      return "fusec_array<" + *element + ", " + std::to_string(body.size()) +
             ">";
    }
  } else if (auto pointer = dyn_cast<LLVM::LLVMPointerType>(type)) {
    // Shared-memory pointers (shared::cta, shared::cluster) are 32-bit
    // addresses, as inline PTX takes them.
    unsigned space = pointer.getAddressSpace();
    if (space == static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) ||
        space == static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster))
      return std::string("unsigned");
  } else if (auto memref = dyn_cast<MemRefType>(type)) {
    name = scalarTypeName(memref.getElementType());
    if (!name.empty())
      return name + "*";
  }
  return op->emitOpError("has a value of type ")
         << type << ", which the CUDA C printer cannot represent";
}

std::string Emitter::floatLiteral(const APFloat &value, Type type) {
  if (type.isF32() || type.isF64()) {
    bool isFloat = type.isF32();
    double d = isFloat ? value.convertToFloat() : value.convertToDouble();
    if (!value.isFinite()) {
      // No literal for these: spell the bits.
      uint64_t bits = value.bitcastToAPInt().getZExtValue();
      std::string name = value.isNaN()        ? "nan"
                         : value.isNegative() ? "-inf"
                                              : "inf";
      return isFloat
                 ? llvm::formatv("__int_as_float({0:x8}) /* {1} */", bits, name)
                       .str()
                 : llvm::formatv("__longlong_as_double({0:x16}ll) /* {1} */",
                                 bits, name)
                       .str();
    }
    // Enough digits to read back the same value.
    char buffer[32];
    snprintf(buffer, sizeof(buffer), isFloat ? "%.9g" : "%.17g", d);
    std::string text = buffer;
    if (StringRef(text).find_first_of(".e") == StringRef::npos)
      text += ".0";
    return isFloat ? text + "f" : text;
  }
  // f16 and bf16 are their bits.
  uint64_t bits = value.bitcastToAPInt().getZExtValue();
  return llvm::formatv("{0}{{{1:x4}}", scalarTypeName(type), bits).str();
}

std::string Emitter::literal(Attribute attr, Type type, bool asUnsigned) {
  if (auto floatAttr = dyn_cast<FloatAttr>(attr))
    return floatLiteral(floatAttr.getValue(), type);
  auto intAttr = dyn_cast<IntegerAttr>(attr);
  if (!intAttr)
    return "";
  unsigned width = bitWidth(type);
  // Index constants have the PTX backend's index width too.
  APInt value = intAttr.getValue().sextOrTrunc(64).trunc(width);
  if (width == 1)
    return value.isZero() ? "false" : "true";
  if (asUnsigned) {
    std::string text = std::to_string(value.getZExtValue());
    return width == 64 ? text + "ull" : text + "u";
  }
  int64_t v = value.getSExtValue();
  if (width == 64) {
    if (v == std::numeric_limits<int64_t>::min())
      return "(-9223372036854775807ll - 1)";
    return std::to_string(v) + "ll";
  }
  if (width == 32 && v == std::numeric_limits<int32_t>::min())
    return "(-2147483647 - 1)";
  std::string text = std::to_string(v);
  if (width < 32)
    return "(" + scalarTypeName(type) + ")" + text;
  return text;
}

std::string Emitter::unsignedExpr(Value v) {
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr)) && !isa<VectorType>(v.getType()))
    return literal(attr, v.getType(), /*asUnsigned=*/true);
  if (bitWidth(v.getType()) == 1)
    return expr(v);
  return "(" + unsignedTypeName(v.getType()) + ")" + expr(v);
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult Emitter::assign(Value result, StringRef init, Operation *op) {
  FailureOr<std::string> type = typeName(result.getType(), op);
  if (failed(type))
    return failure();
  os << *type << " " << define(result) << " = " << init << ";\n";
  return success();
}

LogicalResult Emitter::declare(Value result, Operation *op) {
  FailureOr<std::string> type = typeName(result.getType(), op);
  if (failed(type))
    return failure();
  os << *type << " " << define(result) << ";\n";
  return success();
}

/// `text` as the body of a C string literal.
static std::string escape(StringRef text) {
  std::string result;
  for (char c : text) {
    switch (c) {
    case '\n':
      result += "\\n";
      break;
    case '\t':
      result += "\\t";
      break;
    case '"':
      result += "\\\"";
      break;
    case '\\':
      result += "\\\\";
      break;
    default:
      result += c;
    }
  }
  return result;
}

void Emitter::printAsm(const AsmStatement &statement) {
  SmallVector<StringRef> lines;
  StringRef(statement.ptx).split(lines, '\n');
  SmallVector<std::string> sections = {llvm::join(statement.outputs, ", "),
                                       llvm::join(statement.inputs, ", ")};
  if (statement.sideEffects)
    sections.push_back("\"memory\"");
  while (!sections.empty() && sections.back().empty())
    sections.pop_back();
  std::string head = statement.sideEffects ? "asm volatile(" : "asm(";
  if (lines.size() == 1) {
    std::string line = head + "\"" + escape(lines[0]) + "\"";
    for (const std::string &section : sections)
      line += section.empty() ? " :" : " : " + section;
    if (line.size() <= 100) {
      os << line << ");\n";
      return;
    }
  }
  // One string literal per PTX line and a line per operand section.
  os << head;
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i)
      os << "\n    ";
    os << '"' << escape(line) << (i + 1 < lines.size() ? "\\n" : "") << '"';
  }
  for (const std::string &section : sections)
    os << "\n    :" << (section.empty() ? "" : " " + section);
  os << ");\n";
}

void Emitter::printParallelAssign(ArrayRef<std::string> targets,
                                  ValueRange values) {
  // A value that is itself a target (a loop-carried value moving to another
  // position) must be read before any target is written.
  llvm::StringSet<> targetNames;
  for (const std::string &t : targets)
    targetNames.insert(t);
  bool hazard = false;
  for (auto [target, value] : llvm::zip_equal(targets, values)) {
    std::string e = expr(value);
    if (e != target && targetNames.contains(e))
      hazard = true;
  }
  if (!hazard) {
    for (auto [target, value] : llvm::zip_equal(targets, values))
      if (expr(value) != target)
        os << target << " = " << expr(value) << ";\n";
    return;
  }
  for (auto [target, value] : llvm::zip_equal(targets, values))
    os << "auto " << target << "_next = " << expr(value) << ";\n";
  for (const std::string &target : targets)
    os << target << " = " << target << "_next;\n";
}

LogicalResult Emitter::printBlock(Block &block, ArrayRef<std::string> yieldTo) {
  llvm::SaveAndRestore<ArrayRef<std::string>> targets(this->yieldTo, yieldTo);
  for (Operation &op : block)
    if (failed(printOperation(op)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// scf and gpu.return
//===----------------------------------------------------------------------===//

static LogicalResult printOperation(Emitter &emitter, scf::ForOp op) {
  // Loop-carried values live in variables named after the region's
  // arguments; the loop's results are those variables after it.
  SmallVector<std::string> carried;
  for (auto [arg, init, result] : llvm::zip_equal(
           op.getRegionIterArgs(), op.getInitArgs(), op.getResults())) {
    if (failed(emitter.assign(arg, emitter.expr(init), op)))
      return failure();
    carried.push_back(emitter.expr(arg));
    emitter.bind(result, emitter.expr(arg));
  }
  Value iv = op.getInductionVar();
  FailureOr<std::string> ivType = emitter.typeName(iv.getType(), op);
  if (failed(ivType))
    return failure();
  std::string name = emitter.define(iv);
  std::string bound = emitter.expr(op.getUpperBound());
  std::string condition = name + " < " + bound;
  if (op.getUnsignedCmp())
    condition = "(" + emitter.unsignedTypeName(iv.getType()) + ")" + name +
                " < " + emitter.unsignedExpr(op.getUpperBound());
  raw_indented_ostream &os = emitter.ostream();
  os << "for (" << *ivType << " " << name << " = "
     << emitter.expr(op.getLowerBound()) << "; " << condition << "; " << name
     << " += " << emitter.expr(op.getStep()) << ") {\n";
  os.indent();
  if (failed(emitter.printBlock(*op.getBody(), carried)))
    return failure();
  os.unindent();
  os << "}\n";
  return success();
}

/// Declares `op`'s results, which its regions assign, and returns their
/// names.
static FailureOr<SmallVector<std::string>> declareResults(Emitter &emitter,
                                                          Operation *op) {
  SmallVector<std::string> results;
  for (Value result : op->getResults()) {
    if (failed(emitter.declare(result, op)))
      return failure();
    results.push_back(emitter.expr(result));
  }
  return results;
}

static LogicalResult printOperation(Emitter &emitter, scf::IfOp op) {
  FailureOr<SmallVector<std::string>> results = declareResults(emitter, op);
  if (failed(results))
    return failure();
  raw_indented_ostream &os = emitter.ostream();
  os << "if (" << emitter.expr(op.getCondition()) << ") {\n";
  os.indent();
  if (failed(emitter.printBlock(op.getThenRegion().front(), *results)))
    return failure();
  os.unindent();
  if (!op.getElseRegion().empty() &&
      !(op.getElseRegion().front().getOperations().size() == 1 &&
        results->empty())) {
    os << "} else {\n";
    os.indent();
    if (failed(emitter.printBlock(op.getElseRegion().front(), *results)))
      return failure();
    os.unindent();
  }
  os << "}\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, scf::WhileOp op) {
  // while (true) { before; results = condition args; if (!c) break; after;
  // before args = yielded values; }
  Block &before = op.getBefore().front();
  Block &after = op.getAfter().front();
  SmallVector<std::string> beforeArgs;
  for (auto [arg, init] :
       llvm::zip_equal(before.getArguments(), op.getInits())) {
    if (failed(emitter.assign(arg, emitter.expr(init), op)))
      return failure();
    beforeArgs.push_back(emitter.expr(arg));
  }
  FailureOr<SmallVector<std::string>> results = declareResults(emitter, op);
  if (failed(results))
    return failure();
  raw_indented_ostream &os = emitter.ostream();
  os << "while (true) {\n";
  os.indent();
  if (failed(emitter.printBlock(before, *results)))
    return failure();
  for (auto [arg, result] : llvm::zip_equal(after.getArguments(), *results))
    emitter.bind(arg, result);
  if (failed(emitter.printBlock(after, beforeArgs)))
    return failure();
  os.unindent();
  os << "}\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, scf::ConditionOp op) {
  // The while's results take the arguments; the after region reads them.
  emitter.printParallelAssign(emitter.yieldTargets(), op.getArgs());
  emitter.ostream() << "if (!" << emitter.expr(op.getCondition()) << ")\n";
  emitter.ostream() << "  break;\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, scf::IndexSwitchOp op) {
  FailureOr<SmallVector<std::string>> results = declareResults(emitter, op);
  if (failed(results))
    return failure();
  // Each case in a block of its own: the regions' values are local to it.
  raw_indented_ostream &os = emitter.ostream();
  os << "switch (" << emitter.expr(op.getArg()) << ") {\n";
  for (auto [value, region] :
       llvm::zip_equal(op.getCases(), op.getCaseRegions())) {
    os << "case "
       << emitter.literal(IntegerAttr::get(op.getArg().getType(), value),
                          op.getArg().getType())
       << ": {\n";
    os.indent();
    if (failed(emitter.printBlock(region.front(), *results)))
      return failure();
    os << "break;\n";
    os.unindent();
    os << "}\n";
  }
  os << "default: {\n";
  os.indent();
  if (failed(emitter.printBlock(op.getDefaultBlock(), *results)))
    return failure();
  os.unindent();
  os << "}\n";
  os << "}\n";
  return success();
}

static LogicalResult printOperation(Emitter &emitter, scf::YieldOp op) {
  emitter.printParallelAssign(emitter.yieldTargets(), op.getOperands());
  return success();
}

static LogicalResult printOperation(Emitter &emitter, gpu::ReturnOp op) {
  // The kernel's closing brace returns at its end.
  if (op->getNextNode() || !isa<gpu::GPUFuncOp>(op->getParentOp()))
    emitter.ostream() << "return;\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The dispatch
//===----------------------------------------------------------------------===//

/// This file's ops: control flow.
static std::optional<LogicalResult> printControlFlowOp(Emitter &emitter,
                                                       Operation &op) {
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(&op)
      .Case<scf::ForOp, scf::IfOp, scf::WhileOp, scf::ConditionOp,
            scf::IndexSwitchOp, scf::YieldOp, gpu::ReturnOp>(
          [&](auto op) -> LogicalResult { return printOperation(emitter, op); })
      .Default([](Operation *) { return std::nullopt; });
}

LogicalResult Emitter::printOperation(Operation &op) {
  for (auto printAreaOp :
       {printControlFlowOp, printArithMathOp, printMemoryOp, printNVVMOp})
    if (std::optional<LogicalResult> printed = printAreaOp(*this, op))
      return *printed;
  return op.emitOpError("is not known to the CUDA C printer");
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// What the kernel is, for people reading it: its name, and the family and
/// tile its kernel builder recorded on it.
static void printKernelComment(raw_ostream &os, gpu::GPUFuncOp func) {
  os << "// " << func.getName();
  if (auto family = func->getAttrOfType<StringAttr>(fusec::kFamilyAttr))
    os << ": " << family.getValue();
  if (Attribute tile = func->getAttr(fusec::kTileAttr))
    os << ", " << tile;
  os << "\n";
}

/// The kernel's parameters in the PTX backend's ABI: a 64-bit pointer per
/// buffer, 128-byte tensor maps by value.
static FailureOr<SmallVector<std::string>>
kernelParameters(Emitter &emitter, gpu::GPUFuncOp func) {
  llvm::SmallDenseSet<int64_t> tensorMaps;
  if (auto indices = func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapArgsAttr))
    tensorMaps.insert(indices.asArrayRef().begin(), indices.asArrayRef().end());
  SmallVector<std::string> params;
  for (BlockArgument arg : func.getArguments()) {
    std::string name = emitter.define(arg);
    if (tensorMaps.contains(arg.getArgNumber())) {
      emitter.require(Helper::TensorMap);
      params.push_back("const __grid_constant__ fusec_tensor_map " + name);
      // Its generic address, which TMA copies take.
      emitter.bind(arg, "&" + name);
      continue;
    }
    if (!isa<MemRefType>(arg.getType()))
      return func.emitOpError("has parameter ")
             << arg.getArgNumber() << " of type " << arg.getType()
             << ", which is neither a buffer nor a tensor map";
    FailureOr<std::string> type = emitter.typeName(arg.getType(), func);
    if (failed(type))
      return failure();
    params.push_back(*type + " " + name);
  }
  return params;
}

/// Prints `func` as an `extern "C" __global__` function.
static LogicalResult printKernel(Emitter &emitter, gpu::GPUFuncOp func) {
  if (!func.isKernel())
    return func.emitOpError("is not a kernel; the CUDA C printer prints "
                            "kernels only");
  if (func.getNumWorkgroupAttributions() || func.getNumPrivateAttributions())
    return func.emitOpError("has memory attributions, which the CUDA C "
                            "printer does not know (fusec kernels use "
                            "dynamic shared memory)");
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("has more than one block");
  raw_indented_ostream &os = emitter.ostream();
  printKernelComment(os, func);
  FailureOr<SmallVector<std::string>> params = kernelParameters(emitter, func);
  if (failed(params))
    return failure();

  os << "extern \"C\" __global__ void ";
  if (std::optional<ArrayRef<int32_t>> block = func.getKnownBlockSize()) {
    int64_t threads = 1;
    for (int32_t d : *block)
      threads *= d;
    os << "__launch_bounds__(" << threads;
    if (auto min = func->getAttrOfType<IntegerAttr>("nvvm.minctasm"))
      os << ", " << min.getInt();
    os << ") ";
  }
  os << func.getName() << "(" << llvm::join(*params, ", ") << ") {\n";
  os.indent();
  if (failed(emitter.printBlock(func.getBody().front())))
    return failure();
  if (Value undefined = emitter.firstUndefined()) {
    Operation *user = *undefined.getUsers().begin();
    return user->emitOpError("uses a value the CUDA C printer has no "
                             "expression for (operand of type ")
           << undefined.getType() << ")";
  }
  os.unindent();
  os << "}\n";
  return success();
}

//===----------------------------------------------------------------------===//
// The prelude
//===----------------------------------------------------------------------===//

// kPrelude: the bytes of Prelude.cuh and a NUL, embedded by the build.
#include "Prelude.inc"

/// Each helper and the name of its section in Prelude.cuh.
static constexpr std::pair<Helper, llvm::StringLiteral> kHelperSections[] = {
    {Helper::Half, "half"},
    {Helper::BFloat16, "bfloat16"},
    {Helper::Vec, "vec"},
    {Helper::Array, "array"},
    {Helper::Bitcast, "bitcast"},
    {Helper::TensorMap, "tensor_map"},
    {Helper::MaximumF, "maximumf"},
    {Helper::MinimumF, "minimumf"},
    {Helper::SharedMemory, "shared_memory"},
};

namespace {
/// A section of Prelude.cuh: the helper it declares and its text.
struct PreludeSection {
  Helper helper;
  StringRef text;
};
} // namespace

/// Prelude.cuh's sections, in its order. A section that names no helper, or
/// a helper without exactly one section, is a mistake in the source tree.
static ArrayRef<PreludeSection> preludeSections() {
  static const SmallVector<PreludeSection> sections = [] {
    StringRef prelude(reinterpret_cast<const char *>(kPrelude),
                      sizeof(kPrelude) - 1);
    SmallVector<PreludeSection> result;
    std::set<Helper> seen;
    // A section's text starts after its marker line; the next marker line,
    // or the end of the file, ends it.
    const char *begin = nullptr;
    auto finish = [&](const char *end) {
      if (begin)
        result.back().text =
            StringRef(begin, end - begin).ltrim("\r\n").rtrim();
    };
    for (StringRef rest = prelude; !rest.empty();) {
      auto [line, next] = rest.split('\n');
      rest = next;
      if (!line.starts_with("//--- "))
        continue;
      finish(line.data());
      StringRef name = line.drop_front(6).trim();
      const auto *entry = llvm::find_if(
          kHelperSections, [&](const auto &e) { return e.second == name; });
      if (entry == std::end(kHelperSections) ||
          !seen.insert(entry->first).second)
        llvm::report_fatal_error("Prelude.cuh: section '" + name +
                                 "' is unknown or repeated");
      result.push_back({entry->first, StringRef()});
      begin = line.end();
    }
    finish(prelude.end());
    if (seen.size() != std::size(kHelperSections))
      llvm::report_fatal_error("Prelude.cuh: a helper has no section");
    return result;
  }();
  return sections;
}

/// The prelude's sections that `helpers` names, in its order.
static void printHelpers(const std::set<Helper> &helpers, raw_ostream &os) {
  for (const PreludeSection &section : preludeSections())
    if (helpers.count(section.helper))
      os << section.text << "\n\n";
}

LogicalResult fusec::printCUDA(ModuleOp module, raw_ostream &os) {
  AsmState state(module);
  std::set<Helper> helpers;
  std::string kernels;
  llvm::raw_string_ostream kernelStream(kernels);
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
    for (Operation &op : gpuModule.getBody()->getOperations()) {
      auto func = dyn_cast<gpu::GPUFuncOp>(op);
      if (!func)
        return op.emitOpError("is not a kernel; the CUDA C printer prints "
                              "kernels only");
      // The PTX backend lowers index arithmetic at the data layout's width.
      unsigned indexBits = DataLayout::closest(func).getTypeSizeInBits(
          IndexType::get(func.getContext()));
      if (!kernels.empty())
        kernelStream << "\n";
      Emitter emitter(state, helpers, kernelStream, indexBits);
      if (failed(printKernel(emitter, func)))
        return failure();
    }
  }
  os << "// CUDA C printed by fusec from its tiled kernels. Compile it with "
        "NVRTC and\n// --fmad=false (not --use_fast_math) to compute what the "
        "PTX artifact does.\n\n";
  printHelpers(helpers, os);
  os << kernels;
  return success();
}

FailureOr<std::string> fusec::writeCUDAArtifact(ModuleOp module,
                                                StringRef arch) {
  auto gpuModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.size() != 1)
    return module.emitError("an artifact holds exactly one graph, found ")
           << gpuModules.size() << " kernel modules";
  FailureOr<std::string> text = writeArtifactHeader(module, "cuda", arch);
  if (failed(text))
    return failure();
  llvm::raw_string_ostream os(*text);
  if (failed(printCUDA(module, os)))
    return failure();
  return text;
}

void fusec::registerCUDATranslation() {
  TranslateFromMLIRRegistration registration(
      "fusec-to-cuda", "Print the tiled stage's kernels as CUDA C",
      [](Operation *op, raw_ostream &os) {
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return failure(
              failed(op->emitOpError("is not a module; expected the tiled "
                                     "stage's output")));
        return printCUDA(module, os);
      },
      [](DialectRegistry &registry) {
        // The launch plan beside the kernels holds fuse ops.
        registry.insert<fuse::FuseDialect, arith::ArithDialect, DLTIDialect,
                        func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                        math::MathDialect, memref::MemRefDialect,
                        NVVM::NVVMDialect, nvgpu::NVGPUDialect, scf::SCFDialect,
                        vector::VectorDialect>();
      });
}
