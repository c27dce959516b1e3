//===- CUDAEmitter.cpp - Tiled kernels as CUDA C --------------------------===//
//
// A walk over each gpu.func that prints one C statement per op, names values
// after their MLIR asm names (%47 becomes v47) and turns scf.for/if/while
// into C loops and ifs. Tensor-core, asynchronous-copy and barrier ops become
// the inline PTX the NVVM lowering emits for them.
//
// The C must compute what the PTX backend's code computes, so:
// - `index` is `int`, or `long long` in a gpu.module whose data layout makes
//   it 64 bits: the PTX backend lowers index arithmetic at that width.
// - f32 +, -, *, / are __fadd_rn and friends, which NVRTC never contracts
//   into FMAs (LLVM's NVPTX backend does not contract them either).
// - maximumf/minimumf propagate NaN (max.NaN.f32), unlike fmaxf.
// - Unsigned ops (divui, remui, shrui, cmpi ult, ...) convert their operands
//   to unsigned types; everything else is signed.
// - Inline assembly that touches memory or synchronises is `asm volatile`
//   with a "memory" clobber, as LLVM treats it.
//
//===----------------------------------------------------------------------===//

#include "Fuse/FuseDialect.h"
#include "fusec/Target/Artifact.h"
#include "fusec/Target/CUDA.h"
#include "fusec/Target/TargetDescription.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Support/IndentedOstream.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace mlir;
using namespace fusec;

namespace {

/// A section of Prelude.cuh, printed once before the kernels if one uses it
/// (kHelperSections gives their names).
enum class Helper {
  Half,
  BFloat16,
  Vec,
  Array,
  Bitcast,
  TensorMap,
  SharedMemory,
  MaximumF,
  MinimumF,
};

/// One `asm` statement: PTX text with %N operands, and its operands in
/// GCC's form ("=r"(x)).
struct AsmStatement {
  std::string ptx;
  SmallVector<std::string> outputs, inputs;
  /// Has effects beyond its outputs (memory, synchronisation): `volatile`
  /// and a "memory" clobber, so the compiler keeps it in place.
  bool sideEffects = true;
};

class KernelPrinter {
public:
  KernelPrinter(AsmState &state, std::set<Helper> &helpers)
      : state(state), helpers(helpers) {}

  LogicalResult printKernel(gpu::GPUFuncOp func, raw_ostream &out);

private:
  //===--------------------------------------------------------------------===//
  // Names, types and literals
  //===--------------------------------------------------------------------===//

  /// The C identifier of `v`: its asm name without the `%` (`%47` -> v47,
  /// `%thread_id_x` -> thread_id_x, `%12#3` -> v12_3).
  std::string identifier(Value v);
  /// Names `v` and returns its name. Sibling regions may reuse an asm name
  /// (two loops' %arg3), but loop-carried variables live in the enclosing C
  /// scope, so names are unique per kernel.
  std::string define(Value v) {
    std::string name = identifier(v);
    for (unsigned i = 1; !names.insert(name).second; ++i)
      name = identifier(v) + "_" + std::to_string(i);
    return exprs[v] = name;
  }
  /// The C expression that reads `v`.
  std::string expr(Value v) {
    auto it = exprs.find(v);
    if (it != exprs.end())
      return it->second;
    // A result no statement defines (a shuffle's validity, an async token):
    // the kernel fails once printed, at this value.
    if (!undefined)
      undefined = v;
    return "/*undefined*/";
  }
  /// `v`'s C expression converted to the unsigned type of its width (a
  /// literal with a `u` suffix for constants).
  std::string unsignedExpr(Value v);

  FailureOr<std::string> typeName(Type type, Operation *op);
  std::string scalarTypeName(Type type);
  std::string unsignedTypeName(Type type);
  /// Bits of an integer or float; `index` has the module's index width.
  unsigned bitWidth(Type type) const {
    return isa<IndexType>(type) ? indexBits : type.getIntOrFloatBitWidth();
  }
  /// The C literal of a scalar constant.
  std::string literal(Attribute attr, Type type, bool asUnsigned = false);
  std::string floatLiteral(const APFloat &value, Type type);

  //===--------------------------------------------------------------------===//
  // Statements
  //===--------------------------------------------------------------------===//

  /// `T name = init;` for `result`.
  LogicalResult assign(Value result, StringRef init, Operation *op);
  /// `T name;` for `result`.
  LogicalResult declare(Value result, Operation *op);
  void printAsm(const AsmStatement &statement);

  LogicalResult printBlock(Block &block, ArrayRef<std::string> yieldTo = {});
  LogicalResult printOp(Operation &op, ArrayRef<std::string> yieldTo);
  /// Assigns `values` to `targets` as if at once (an scf.yield).
  void printParallelAssign(ArrayRef<std::string> targets, ValueRange values);

  /// Prints an elementwise op: `scalar` gives the C expression of one
  /// element from its operands' expressions; vector results apply it per
  /// element.
  using ScalarFn = llvm::function_ref<std::string(ArrayRef<std::string>)>;
  LogicalResult printElementwise(Operation *op, ScalarFn scalar);

  LogicalResult printConstant(arith::ConstantOp op);
  LogicalResult printArith(Operation *op);
  LogicalResult printCast(Operation *op);
  LogicalResult printMath(Operation *op);
  LogicalResult printFor(scf::ForOp op);
  LogicalResult printIf(scf::IfOp op);
  LogicalResult printWhile(scf::WhileOp op);
  LogicalResult printIndexSwitch(scf::IndexSwitchOp op);

  /// The element `indices` address in `memref` as `base + offset`, or
  /// `base[offset]` when `subscript`.
  FailureOr<std::string> element(Value memref, ValueRange indices,
                                 Operation *op, bool subscript);
  /// The 32-bit shared-memory address of that element.
  FailureOr<std::string> sharedAddress(Value memref, ValueRange indices,
                                       Operation *op);
  LogicalResult printVectorAccess(Operation *op, Value memref,
                                  ValueRange indices, VectorType type,
                                  std::optional<uint64_t> alignment,
                                  Value stored);

  LogicalResult printInlineAsm(LLVM::InlineAsmOp op);
  LogicalResult printLdMatrix(nvgpu::LdMatrixOp op);
  LogicalResult printAsyncCopy(nvgpu::DeviceAsyncCopyOp op);
  LogicalResult printMma(NVVM::MmaOp op);
  LogicalResult printWgmma(NVVM::WgmmaMmaAsyncOp op);
  LogicalResult printTmaLoad(NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp op);
  /// The "r" operand of a shared-memory pointer (an mbarrier, a TMA
  /// destination), failing for other address spaces.
  FailureOr<std::string> sharedPointer(Value ptr, Operation *op);

  AsmState &state;
  std::set<Helper> &helpers;
  /// The width of `index`, from the gpu.module's data layout.
  unsigned indexBits = 32;
  DenseMap<Value, std::string> exprs;
  llvm::StringSet<> names;
  /// The first value used without a C expression.
  Value undefined;
  raw_indented_ostream *os = nullptr;
};
} // namespace

//===----------------------------------------------------------------------===//
// Names, types and literals
//===----------------------------------------------------------------------===//

std::string KernelPrinter::identifier(Value v) {
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

std::string KernelPrinter::scalarTypeName(Type type) {
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

std::string KernelPrinter::unsignedTypeName(Type type) {
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

FailureOr<std::string> KernelPrinter::typeName(Type type, Operation *op) {
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

std::string KernelPrinter::floatLiteral(const APFloat &value, Type type) {
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

std::string KernelPrinter::literal(Attribute attr, Type type, bool asUnsigned) {
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

std::string KernelPrinter::unsignedExpr(Value v) {
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

LogicalResult KernelPrinter::assign(Value result, StringRef init,
                                    Operation *op) {
  FailureOr<std::string> type = typeName(result.getType(), op);
  if (failed(type))
    return failure();
  *os << *type << " " << define(result) << " = " << init << ";\n";
  return success();
}

LogicalResult KernelPrinter::declare(Value result, Operation *op) {
  FailureOr<std::string> type = typeName(result.getType(), op);
  if (failed(type))
    return failure();
  *os << *type << " " << define(result) << ";\n";
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

void KernelPrinter::printAsm(const AsmStatement &statement) {
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
      *os << line << ");\n";
      return;
    }
  }
  // One string literal per PTX line and a line per operand section.
  *os << head;
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (i)
      *os << "\n    ";
    *os << '"' << escape(line) << (i + 1 < lines.size() ? "\\n" : "") << '"';
  }
  for (const std::string &section : sections)
    *os << "\n    :" << (section.empty() ? "" : " " + section);
  *os << ");\n";
}

void KernelPrinter::printParallelAssign(ArrayRef<std::string> targets,
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
        *os << target << " = " << expr(value) << ";\n";
    return;
  }
  for (auto [target, value] : llvm::zip_equal(targets, values))
    *os << "auto " << target << "_next = " << expr(value) << ";\n";
  for (const std::string &target : targets)
    *os << target << " = " << target << "_next;\n";
}

LogicalResult KernelPrinter::printBlock(Block &block,
                                        ArrayRef<std::string> yieldTo) {
  for (Operation &op : block)
    if (failed(printOp(op, yieldTo)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// arith and math
//===----------------------------------------------------------------------===//

LogicalResult KernelPrinter::printElementwise(Operation *op, ScalarFn scalar) {
  Value result = op->getResult(0);
  auto vector = dyn_cast<VectorType>(result.getType());
  if (!vector) {
    SmallVector<std::string> operands;
    for (Value v : op->getOperands())
      operands.push_back(expr(v));
    return assign(result, scalar(operands), op);
  }
  if (vector.getRank() != 1)
    return op->emitOpError("on a vector of rank ")
           << vector.getRank() << " has no CUDA C form";
  if (failed(declare(result, op)))
    return failure();
  for (int64_t i = 0, e = vector.getNumElements(); i < e; ++i) {
    SmallVector<std::string> operands;
    for (Value v : op->getOperands())
      operands.push_back(isa<VectorType>(v.getType())
                             ? expr(v) + ".v[" + std::to_string(i) + "]"
                             : expr(v));
    *os << expr(result) << ".v[" << i << "] = " << scalar(operands) << ";\n";
  }
  return success();
}

LogicalResult KernelPrinter::printConstant(arith::ConstantOp op) {
  Type type = op.getType();
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
    auto vector = dyn_cast<VectorType>(type);
    if (!vector || vector.getRank() != 1)
      return op.emitOpError("of type ") << type << " has no CUDA C form";
    SmallVector<std::string> elements;
    for (Attribute element : dense.getValues<Attribute>())
      elements.push_back(literal(element, vector.getElementType()));
    FailureOr<std::string> typeText = typeName(type, op);
    if (failed(typeText))
      return failure();
    *os << "const " << *typeText << " " << define(op.getResult()) << " = {{"
        << llvm::join(elements, ", ") << "}};\n";
    return success();
  }
  std::string text = literal(op.getValue(), type);
  if (text.empty())
    return op.emitOpError("has no CUDA C form");
  exprs[op.getResult()] = text;
  return success();
}

/// The CUDA function that rounds `a op b` once in `type` (f32 or f64) and
/// is never contracted into an FMA.
static std::string roundedBinary(Type type, StringRef op, StringRef a,
                                 StringRef b) {
  return ((type.isF32() ? "__f" : "__d") + op + "_rn(" + a + ", " + b + ")")
      .str();
}

static std::string cmpiOperator(arith::CmpIPredicate predicate) {
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return "==";
  case arith::CmpIPredicate::ne:
    return "!=";
  case arith::CmpIPredicate::slt:
  case arith::CmpIPredicate::ult:
    return "<";
  case arith::CmpIPredicate::sle:
  case arith::CmpIPredicate::ule:
    return "<=";
  case arith::CmpIPredicate::sgt:
  case arith::CmpIPredicate::ugt:
    return ">";
  case arith::CmpIPredicate::sge:
  case arith::CmpIPredicate::uge:
    return ">=";
  }
  llvm_unreachable("unknown predicate");
}

static bool isUnsigned(arith::CmpIPredicate predicate) {
  return predicate == arith::CmpIPredicate::ult ||
         predicate == arith::CmpIPredicate::ule ||
         predicate == arith::CmpIPredicate::ugt ||
         predicate == arith::CmpIPredicate::uge;
}

/// The C form of `a pred b` on floats: C's <, <=, >, >= and == are the
/// ordered predicates and != is une; the rest negate or combine them.
static std::string cmpfExpr(arith::CmpFPredicate predicate, StringRef a,
                            StringRef b) {
  auto bin = [&](StringRef op) { return (a + " " + op + " " + b).str(); };
  switch (predicate) {
  case arith::CmpFPredicate::AlwaysFalse:
    return "false";
  case arith::CmpFPredicate::AlwaysTrue:
    return "true";
  case arith::CmpFPredicate::OEQ:
    return bin("==");
  case arith::CmpFPredicate::OGT:
    return bin(">");
  case arith::CmpFPredicate::OGE:
    return bin(">=");
  case arith::CmpFPredicate::OLT:
    return bin("<");
  case arith::CmpFPredicate::OLE:
    return bin("<=");
  case arith::CmpFPredicate::ONE:
    return "(" + bin("<") + " || " + bin(">") + ")";
  case arith::CmpFPredicate::ORD:
    return ("(" + a + " == " + a + " && " + b + " == " + b + ")").str();
  case arith::CmpFPredicate::UEQ:
    return "!(" + bin("<") + " || " + bin(">") + ")";
  case arith::CmpFPredicate::UGT:
    return "!(" + bin("<=") + ")";
  case arith::CmpFPredicate::UGE:
    return "!(" + bin("<") + ")";
  case arith::CmpFPredicate::ULT:
    return "!(" + bin(">=") + ")";
  case arith::CmpFPredicate::ULE:
    return "!(" + bin(">") + ")";
  case arith::CmpFPredicate::UNE:
    return bin("!=");
  case arith::CmpFPredicate::UNO:
    return ("(" + a + " != " + a + " || " + b + " != " + b + ")").str();
  }
  llvm_unreachable("unknown predicate");
}

/// `e` (of a float type) as an f32 or f64 value C compares exactly.
static std::string widened(Type type, StringRef e) {
  if (type.isF16())
    return ("fusec_half2float(" + e + ")").str();
  if (type.isBF16())
    return ("fusec_bfloat162float(" + e + ")").str();
  return e.str();
}

LogicalResult KernelPrinter::printArith(Operation *op) {
  Type type = getElementTypeOrSelf(op->getResult(0).getType());
  Type operandType = op->getNumOperands()
                         ? getElementTypeOrSelf(op->getOperand(0).getType())
                         : type;
  bool isBool = bitWidth(operandType) == 1 && !isa<FloatType>(operandType);
  auto binary = [&](StringRef op) {
    return [op](ArrayRef<std::string> o) {
      return o[0] + " " + op.str() + " " + o[1];
    };
  };
  // Unsigned operations read their operands as unsigned: vector elements
  // through a cast, scalars through unsignedExpr (which keeps literals
  // readable).
  bool scalar = !isa<VectorType>(op->getResult(0).getType());
  std::string unsignedType = unsignedTypeName(operandType);
  auto u = [&](unsigned i, StringRef e) {
    if (scalar)
      return unsignedExpr(op->getOperand(i));
    return "(" + unsignedType + ")" + e.str();
  };
  auto unsignedBinary = [&](StringRef op) {
    return [&, op](ArrayRef<std::string> o) {
      return u(0, o[0]) + " " + op.str() + " " + u(1, o[1]);
    };
  };
  auto floatBinary = [&](StringRef name) {
    return [&, name](ArrayRef<std::string> o) {
      return roundedBinary(type, name, o[0], o[1]);
    };
  };
  // f16 and bf16 are storage types in fusec's kernels: all arithmetic is on
  // f32 (or f64).
  bool isWide = type.isF32() || type.isF64();
  auto noHalfArithmetic = [&]() {
    return op->emitOpError("on ")
           << type << " has no CUDA C form (fusec computes in f32)";
  };
  auto call = [](StringRef name) {
    return [name](ArrayRef<std::string> o) {
      return name.str() + "(" + llvm::join(o, ", ") + ")";
    };
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::AddIOp) -> LogicalResult {
        return printElementwise(op, binary("+"));
      })
      .Case([&](arith::SubIOp) -> LogicalResult {
        return printElementwise(op, binary("-"));
      })
      .Case([&](arith::MulIOp) -> LogicalResult {
        return printElementwise(op, binary("*"));
      })
      .Case([&](arith::DivSIOp) -> LogicalResult {
        return printElementwise(op, binary("/"));
      })
      .Case([&](arith::RemSIOp) -> LogicalResult {
        return printElementwise(op, binary("%"));
      })
      .Case([&](arith::DivUIOp) -> LogicalResult {
        return printElementwise(op, unsignedBinary("/"));
      })
      .Case([&](arith::RemUIOp) -> LogicalResult {
        return printElementwise(op, unsignedBinary("%"));
      })
      .Case([&](arith::CeilDivUIOp) -> LogicalResult {
        // a == 0 ? 0 : (a - 1) / b + 1, as arith defines it.
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return o[0] + " == 0 ? 0 : (" + u(0, o[0]) + " - 1) / " + u(1, o[1]) +
                 " + 1";
        });
      })
      .Case([&](arith::CeilDivSIOp) -> LogicalResult {
        return printElementwise(op, [](ArrayRef<std::string> o) {
          return o[0] + " / " + o[1] + " + (" + o[0] + " % " + o[1] +
                 " != 0 && (" + o[0] + " < 0) == (" + o[1] + " < 0))";
        });
      })
      .Case([&](arith::FloorDivSIOp) -> LogicalResult {
        return printElementwise(op, [](ArrayRef<std::string> o) {
          return o[0] + " / " + o[1] + " - (" + o[0] + " % " + o[1] +
                 " != 0 && (" + o[0] + " < 0) != (" + o[1] + " < 0))";
        });
      })
      .Case([&](arith::AndIOp) -> LogicalResult {
        return printElementwise(op, binary(isBool ? "&&" : "&"));
      })
      .Case([&](arith::OrIOp) -> LogicalResult {
        return printElementwise(op, binary(isBool ? "||" : "|"));
      })
      .Case([&](arith::XOrIOp) -> LogicalResult {
        return printElementwise(op, binary(isBool ? "!=" : "^"));
      })
      .Case([&](arith::ShLIOp) -> LogicalResult {
        return printElementwise(op, binary("<<"));
      })
      .Case([&](arith::ShRSIOp) -> LogicalResult {
        return printElementwise(op, binary(">>"));
      })
      .Case([&](arith::ShRUIOp) -> LogicalResult {
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return u(0, o[0]) + " >> " + o[1];
        });
      })
      .Case([&](arith::MinSIOp) -> LogicalResult {
        return printElementwise(op, call("min"));
      })
      .Case([&](arith::MaxSIOp) -> LogicalResult {
        return printElementwise(op, call("max"));
      })
      .Case([&](arith::MinUIOp) -> LogicalResult {
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return "min(" + u(0, o[0]) + ", " + u(1, o[1]) + ")";
        });
      })
      .Case([&](arith::MaxUIOp) -> LogicalResult {
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return "max(" + u(0, o[0]) + ", " + u(1, o[1]) + ")";
        });
      })
      .Case([&](arith::CmpIOp cmp) -> LogicalResult {
        arith::CmpIPredicate predicate = cmp.getPredicate();
        std::string c = cmpiOperator(predicate);
        if (!isUnsigned(predicate))
          return printElementwise(op, binary(c));
        return printElementwise(op, unsignedBinary(c));
      })
      .Case([&](arith::CmpFOp cmp) -> LogicalResult {
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return cmpfExpr(cmp.getPredicate(), widened(operandType, o[0]),
                          widened(operandType, o[1]));
        });
      })
      .Case([&](arith::SelectOp) -> LogicalResult {
        // A scalar condition selects whole vectors (C's ?: takes structs).
        if (!isa<VectorType>(op->getOperand(0).getType()))
          return assign(op->getResult(0),
                        expr(op->getOperand(0)) + " ? " +
                            expr(op->getOperand(1)) + " : " +
                            expr(op->getOperand(2)),
                        op);
        return printElementwise(op, [](ArrayRef<std::string> o) {
          return o[0] + " ? " + o[1] + " : " + o[2];
        });
      })
      .Case<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(
          [&](Operation *) -> LogicalResult {
            if (!isWide)
              return noHalfArithmetic();
            StringRef name = llvm::TypeSwitch<Operation *, StringRef>(op)
                                 .Case([](arith::AddFOp) { return "add"; })
                                 .Case([](arith::SubFOp) { return "sub"; })
                                 .Case([](arith::MulFOp) { return "mul"; })
                                 .Default([](Operation *) { return "div"; });
            return printElementwise(op, floatBinary(name));
          })
      .Case([&](arith::RemFOp) -> LogicalResult {
        if (!isWide)
          return noHalfArithmetic();
        return printElementwise(op, call(type.isF32() ? "fmodf" : "fmod"));
      })
      .Case([&](arith::NegFOp) -> LogicalResult {
        if (!isWide)
          return noHalfArithmetic();
        return printElementwise(
            op, [](ArrayRef<std::string> o) { return "-" + o[0]; });
      })
      .Case([&](arith::MaximumFOp) -> LogicalResult {
        // NaN-propagating: max.NaN, as the NVPTX backend selects.
        if (!type.isF32())
          return noHalfArithmetic();
        helpers.insert(Helper::MaximumF);
        return printElementwise(op, call("fusec_maximumf"));
      })
      .Case([&](arith::MinimumFOp) -> LogicalResult {
        if (!type.isF32())
          return noHalfArithmetic();
        helpers.insert(Helper::MinimumF);
        return printElementwise(op, call("fusec_minimumf"));
      })
      .Case([&](arith::MaxNumFOp) -> LogicalResult {
        // The other operand when one is NaN: max.f32, as fmaxf.
        if (!isWide)
          return noHalfArithmetic();
        return printElementwise(op, call(type.isF32() ? "fmaxf" : "fmax"));
      })
      .Case([&](arith::MinNumFOp) -> LogicalResult {
        if (!isWide)
          return noHalfArithmetic();
        return printElementwise(op, call(type.isF32() ? "fminf" : "fmin"));
      })
      .Default([&](Operation *) -> LogicalResult { return printCast(op); });
}

LogicalResult KernelPrinter::printCast(Operation *op) {
  if (op->getNumOperands() != 1 || op->getNumResults() != 1)
    return op->emitOpError("is not known to the CUDA C printer");
  Type from = getElementTypeOrSelf(op->getOperand(0).getType());
  Type to = getElementTypeOrSelf(op->getResult(0).getType());
  std::string toName = scalarTypeName(to);
  // Integer conversions: widen from the operand's signed or unsigned type,
  // truncate by converting.
  auto intCast = [&](bool zeroExtend) {
    return [&, zeroExtend](ArrayRef<std::string> o) -> std::string {
      unsigned fromWidth = bitWidth(from), toWidth = bitWidth(to);
      if (fromWidth == toWidth)
        return o[0];
      if (toWidth == 1)
        return "(" + o[0] + " & 1) != 0";
      if (fromWidth < toWidth && zeroExtend && fromWidth > 1)
        return "(" + toName + ")(" + unsignedTypeName(from) + ")" + o[0];
      return "(" + toName + ")" + o[0];
    };
  };
  auto fail = [&]() {
    return op->emitOpError("from ")
           << from << " to " << to << " has no CUDA C form";
  };
  auto call = [](std::string name) {
    return [name](ArrayRef<std::string> o) { return name + "(" + o[0] + ")"; };
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(
          [&](Operation *) -> LogicalResult {
            return printElementwise(op, intCast(false));
          })
      .Case<arith::IndexCastUIOp, arith::ExtUIOp>(
          [&](Operation *) -> LogicalResult {
            return printElementwise(op, intCast(true));
          })
      .Case([&](arith::ExtFOp) -> LogicalResult {
        if (from.isF16() && to.isF32())
          return printElementwise(op, call("fusec_half2float"));
        if (from.isBF16() && to.isF32())
          return printElementwise(op, call("fusec_bfloat162float"));
        if (from.isF32() && to.isF64())
          return printElementwise(
              op, [](ArrayRef<std::string> o) { return "(double)" + o[0]; });
        return fail();
      })
      .Case([&](arith::TruncFOp truncf) -> LogicalResult {
        // Round to nearest even, arith's default and the only mode fusec
        // uses.
        if (truncf.getRoundingmode() &&
            *truncf.getRoundingmode() != arith::RoundingMode::to_nearest_even)
          return op->emitOpError("with a rounding mode other than "
                                 "to_nearest_even has no CUDA C form");
        if (from.isF32() && to.isF16())
          return printElementwise(op, call("fusec_float2half_rn"));
        if (from.isF32() && to.isBF16())
          return printElementwise(op, call("fusec_float2bfloat16_rn"));
        if (from.isF64() && to.isF32())
          return printElementwise(op, call("__double2float_rn"));
        return fail();
      })
      .Case([&](arith::SIToFPOp) -> LogicalResult {
        if (!to.isF32() && !to.isF64())
          return fail();
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return "(" + toName + ")" + o[0];
        });
      })
      .Case([&](arith::UIToFPOp) -> LogicalResult {
        if (!to.isF32() && !to.isF64())
          return fail();
        return printElementwise(op, [&](ArrayRef<std::string> o) {
          return "(" + toName + ")(" + unsignedTypeName(from) + ")" + o[0];
        });
      })
      .Case([&](arith::FPToSIOp) -> LogicalResult {
        // Round toward zero; out of range saturates as cvt.rzi does.
        if (from.isF32() && bitWidth(to) == 32)
          return printElementwise(op, call("__float2int_rz"));
        if (from.isF32() && bitWidth(to) == 64)
          return printElementwise(op, call("__float2ll_rz"));
        return fail();
      })
      .Case([&](arith::FPToUIOp) -> LogicalResult {
        if (from.isF32() && bitWidth(to) == 32)
          return printElementwise(op, call("(int)__float2uint_rz"));
        if (from.isF32() && bitWidth(to) == 64)
          return printElementwise(op, call("(long long)__float2ull_rz"));
        return fail();
      })
      .Case([&](arith::BitcastOp) -> LogicalResult {
        if (from.isF32() && to.isInteger(32))
          return printElementwise(op, call("__float_as_int"));
        if (from.isInteger(32) && to.isF32())
          return printElementwise(op, call("__int_as_float"));
        if ((from.isF16() || from.isBF16()) && to.isInteger(16))
          return printElementwise(op, [](ArrayRef<std::string> o) {
            return "(short)" + o[0] + ".bits";
          });
        if (from.isInteger(16) && (to.isF16() || to.isBF16()))
          return printElementwise(op, [&](ArrayRef<std::string> o) {
            return toName + "{(unsigned short)" + o[0] + "}";
          });
        return fail();
      })
      .Default([&](Operation *) -> LogicalResult {
        return op->emitOpError("is not known to the CUDA C printer");
      });
}

LogicalResult KernelPrinter::printMath(Operation *op) {
  Type type = getElementTypeOrSelf(op->getResult(0).getType());
  if (!type.isF32())
    return op->emitOpError("on ") << type << " has no CUDA C form";
  // CUDA's accurate functions: the libdevice functions the PTX backend
  // calls. The square root rounds correctly whatever NVRTC's flags say.
  StringRef name = llvm::TypeSwitch<Operation *, StringRef>(op)
                       .Case([](math::ExpOp) { return "expf"; })
                       .Case([](math::Exp2Op) { return "exp2f"; })
                       .Case([](math::ExpM1Op) { return "expm1f"; })
                       .Case([](math::LogOp) { return "logf"; })
                       .Case([](math::Log2Op) { return "log2f"; })
                       .Case([](math::Log1pOp) { return "log1pf"; })
                       .Case([](math::TanhOp) { return "tanhf"; })
                       .Case([](math::ErfOp) { return "erff"; })
                       .Case([](math::RsqrtOp) { return "rsqrtf"; })
                       .Case([](math::SqrtOp) { return "__fsqrt_rn"; })
                       .Case([](math::FloorOp) { return "floorf"; })
                       .Case([](math::CeilOp) { return "ceilf"; })
                       .Case([](math::RoundOp) { return "roundf"; })
                       .Case([](math::RoundEvenOp) { return "rintf"; })
                       .Case([](math::TruncOp) { return "truncf"; })
                       .Case([](math::AbsFOp) { return "fabsf"; })
                       .Case([](math::SinOp) { return "sinf"; })
                       .Case([](math::CosOp) { return "cosf"; })
                       .Case([](math::PowFOp) { return "powf"; })
                       .Case([](math::FmaOp) { return "fmaf"; })
                       .Case([](math::CopySignOp) { return "copysignf"; })
                       .Default([](Operation *) { return ""; });
  if (name.empty())
    return op->emitOpError("is not known to the CUDA C printer");
  return printElementwise(op, [name](ArrayRef<std::string> o) {
    return name.str() + "(" + llvm::join(o, ", ") + ")";
  });
}

//===----------------------------------------------------------------------===//
// scf
//===----------------------------------------------------------------------===//

LogicalResult KernelPrinter::printFor(scf::ForOp op) {
  // Loop-carried values live in variables named after the region's
  // arguments; the loop's results are those variables after it.
  SmallVector<std::string> carried;
  for (auto [arg, init, result] : llvm::zip_equal(
           op.getRegionIterArgs(), op.getInitArgs(), op.getResults())) {
    if (failed(assign(arg, expr(init), op)))
      return failure();
    carried.push_back(expr(arg));
    exprs[result] = expr(arg);
  }
  Value iv = op.getInductionVar();
  FailureOr<std::string> ivType = typeName(iv.getType(), op);
  if (failed(ivType))
    return failure();
  std::string name = define(iv);
  std::string bound = expr(op.getUpperBound());
  std::string condition = name + " < " + bound;
  if (op.getUnsignedCmp())
    condition = "(" + unsignedTypeName(iv.getType()) + ")" + name + " < " +
                unsignedExpr(op.getUpperBound());
  *os << "for (" << *ivType << " " << name << " = " << expr(op.getLowerBound())
      << "; " << condition << "; " << name << " += " << expr(op.getStep())
      << ") {\n";
  os->indent();
  if (failed(printBlock(*op.getBody(), carried)))
    return failure();
  os->unindent();
  *os << "}\n";
  return success();
}

LogicalResult KernelPrinter::printIf(scf::IfOp op) {
  SmallVector<std::string> results;
  for (Value result : op.getResults()) {
    if (failed(declare(result, op)))
      return failure();
    results.push_back(expr(result));
  }
  *os << "if (" << expr(op.getCondition()) << ") {\n";
  os->indent();
  if (failed(printBlock(op.getThenRegion().front(), results)))
    return failure();
  os->unindent();
  if (!op.getElseRegion().empty() &&
      !(op.getElseRegion().front().getOperations().size() == 1 &&
        results.empty())) {
    *os << "} else {\n";
    os->indent();
    if (failed(printBlock(op.getElseRegion().front(), results)))
      return failure();
    os->unindent();
  }
  *os << "}\n";
  return success();
}

LogicalResult KernelPrinter::printWhile(scf::WhileOp op) {
  // while (true) { before; results = condition args; if (!c) break; after;
  // before args = yielded values; }
  Block &before = op.getBefore().front();
  Block &after = op.getAfter().front();
  SmallVector<std::string> beforeArgs, results;
  for (auto [arg, init] :
       llvm::zip_equal(before.getArguments(), op.getInits())) {
    if (failed(assign(arg, expr(init), op)))
      return failure();
    beforeArgs.push_back(expr(arg));
  }
  for (Value result : op.getResults()) {
    if (failed(declare(result, op)))
      return failure();
    results.push_back(expr(result));
  }
  *os << "while (true) {\n";
  os->indent();
  for (Operation &nested : before.without_terminator())
    if (failed(printOp(nested, {})))
      return failure();
  auto condition = cast<scf::ConditionOp>(before.getTerminator());
  printParallelAssign(results, condition.getArgs());
  *os << "if (!" << expr(condition.getCondition()) << ")\n";
  *os << "  break;\n";
  for (auto [arg, result] : llvm::zip_equal(after.getArguments(), results))
    exprs[arg] = result;
  if (failed(printBlock(after, beforeArgs)))
    return failure();
  os->unindent();
  *os << "}\n";
  return success();
}

LogicalResult KernelPrinter::printIndexSwitch(scf::IndexSwitchOp op) {
  SmallVector<std::string> results;
  for (Value result : op.getResults()) {
    if (failed(declare(result, op)))
      return failure();
    results.push_back(expr(result));
  }
  // Each case in a block of its own: the regions' values are local to it.
  *os << "switch (" << expr(op.getArg()) << ") {\n";
  for (auto [value, region] :
       llvm::zip_equal(op.getCases(), op.getCaseRegions())) {
    *os << "case "
        << literal(IntegerAttr::get(op.getArg().getType(), value),
                   op.getArg().getType())
        << ": {\n";
    os->indent();
    if (failed(printBlock(region.front(), results)))
      return failure();
    *os << "break;\n";
    os->unindent();
    *os << "}\n";
  }
  *os << "default: {\n";
  os->indent();
  if (failed(printBlock(op.getDefaultBlock(), results)))
    return failure();
  os->unindent();
  *os << "}\n";
  *os << "}\n";
  return success();
}

//===----------------------------------------------------------------------===//
// memref and vector
//===----------------------------------------------------------------------===//

FailureOr<std::string> KernelPrinter::element(Value memref, ValueRange indices,
                                              Operation *op, bool subscript) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return op->emitOpError("accesses ")
           << type << ", whose layout has no static strides";
  // Index arithmetic at the PTX backend's index width.
  SmallVector<std::string> terms;
  int64_t constant = offset;
  for (auto [index, stride] : llvm::zip_equal(indices, strides)) {
    if (std::optional<int64_t> c = getConstantIntValue(index)) {
      constant += *c * stride;
      continue;
    }
    terms.push_back(stride == 1 ? expr(index)
                                : expr(index) + " * " + std::to_string(stride));
  }
  if (constant || terms.empty())
    terms.push_back(std::to_string(constant));
  std::string sum = llvm::join(terms, " + ");
  if (subscript)
    return expr(memref) + "[" + sum + "]";
  if (sum == "0")
    return expr(memref);
  return expr(memref) + " + " + sum;
}

static bool isShared(MemRefType type) {
  auto space =
      dyn_cast_if_present<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

FailureOr<std::string>
KernelPrinter::sharedAddress(Value memref, ValueRange indices, Operation *op) {
  if (!isShared(cast<MemRefType>(memref.getType())))
    return op->emitOpError("expects a workgroup memref, found ")
           << memref.getType();
  FailureOr<std::string> pointer = element(memref, indices, op, false);
  if (failed(pointer))
    return failure();
  return "(unsigned)__cvta_generic_to_shared(" + *pointer + ")";
}

/// The alignment LLVM gives a vector of `bytes` bytes: its size rounded to
/// a power of two; fusec_vec caps it at 16 (the widest access).
static uint64_t vecAlignment(uint64_t bytes) {
  uint64_t align = 1;
  while (align < 16 && bytes % (align * 2) == 0)
    align *= 2;
  return align;
}

LogicalResult KernelPrinter::printVectorAccess(
    Operation *op, Value memref, ValueRange indices, VectorType type,
    std::optional<uint64_t> alignment, Value stored) {
  if (type.getRank() != 1)
    return op->emitOpError("of a vector of rank ")
           << type.getRank() << " has no CUDA C form";
  FailureOr<std::string> vecType = typeName(type, op);
  FailureOr<std::string> pointer = element(memref, indices, op, false);
  if (failed(vecType) || failed(pointer))
    return failure();
  int64_t n = type.getNumElements();
  uint64_t bytes = n * type.getElementTypeBitWidth() / 8;
  // Without an alignment the access is only element-aligned.
  uint64_t elementBytes = type.getElementTypeBitWidth() / 8;
  if (alignment.value_or(elementBytes) >= vecAlignment(bytes)) {
    std::string access = "*(" + std::string(stored ? "" : "const ") + *vecType +
                         "*)(" + *pointer + ")";
    if (stored) {
      *os << access << " = " << expr(stored) << ";\n";
      return success();
    }
    return assign(op->getResult(0), access, op);
  }
  FailureOr<std::string> base = element(memref, indices, op, true);
  std::string first = base->substr(0, base->size() - 1);
  if (stored) {
    for (int64_t i = 0; i < n; ++i)
      *os << first << " + " << i << "] = " << expr(stored) << ".v[" << i
          << "];\n";
    return success();
  }
  SmallVector<std::string> elements;
  for (int64_t i = 0; i < n; ++i)
    elements.push_back(first + " + " + std::to_string(i) + "]");
  return assign(op->getResult(0), "{{" + llvm::join(elements, ", ") + "}}", op);
}

//===----------------------------------------------------------------------===//
// Tensor cores, asynchronous copies, barriers
//===----------------------------------------------------------------------===//

/// `%first, ..., %(first + count - 1)` in braces: a PTX vector operand.
static std::string operandList(unsigned first, unsigned count) {
  SmallVector<std::string> names;
  for (unsigned i = 0; i < count; ++i)
    names.push_back("%" + std::to_string(first + i));
  return "{" + llvm::join(names, ", ") + "}";
}

FailureOr<std::string> KernelPrinter::sharedPointer(Value ptr, Operation *op) {
  auto type = dyn_cast<LLVM::LLVMPointerType>(ptr.getType());
  if (!type ||
      (type.getAddressSpace() !=
           static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared) &&
       type.getAddressSpace() !=
           static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster)))
    return op->emitOpError("takes a pointer of type ")
           << ptr.getType()
           << "; the CUDA C printer knows shared-memory pointers only";
  return "\"r\"(" + expr(ptr) + ")";
}

LogicalResult KernelPrinter::printInlineAsm(LLVM::InlineAsmOp op) {
  if (op.getAsmDialect() && *op.getAsmDialect() != LLVM::AsmDialect::AD_ATT)
    return op.emitOpError("in Intel syntax has no CUDA C form");
  // LLVM numbers outputs, then every input; GCC (and CUDA) number outputs,
  // then the inputs not tied to an output ("+" outputs stand for both).
  SmallVector<StringRef> constraints;
  op.getConstraints().split(constraints, ',');
  SmallVector<StringRef> outputConstraints;
  SmallVector<std::pair<StringRef, Value>> inputs;
  DenseMap<unsigned, unsigned> tiedOutput, cudaNumber;
  bool memory = false;
  unsigned operand = 0, next = 0;
  for (StringRef c : constraints) {
    c = c.trim();
    if (c.consume_front("=")) {
      c.consume_front("&");
      cudaNumber[next++] = outputConstraints.size();
      outputConstraints.push_back(c);
      continue;
    }
    if (c.starts_with("~")) {
      memory |= c == "~{memory}";
      continue;
    }
    if (operand >= op.getOperands().size())
      return op.emitOpError("has more input constraints than operands");
    unsigned tied;
    if (!c.getAsInteger(10, tied)) {
      if (tied >= outputConstraints.size())
        return op.emitOpError("ties an input to output ")
               << tied << ", which does not exist";
      tiedOutput[tied] = operand;
      cudaNumber[next++] = tied;
    } else {
      inputs.push_back({c, op.getOperands()[operand]});
      next++;
    }
    ++operand;
  }
  unsigned numOutputs = outputConstraints.size();
  // Second pass: the untied inputs follow the outputs.
  unsigned untied = 0;
  next = numOutputs;
  for (StringRef c : ArrayRef(constraints)) {
    c = c.trim();
    if (c.starts_with("=") || c.starts_with("~"))
      continue;
    unsigned tied;
    if (c.getAsInteger(10, tied))
      cudaNumber[next] = numOutputs + untied++;
    ++next;
  }

  AsmStatement statement;
  statement.sideEffects = op.getHasSideEffects() || memory;
  // $N -> %N (renumbered), $$ -> $, % -> %%.
  StringRef text = op.getAsmString();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      statement.ptx += "%%";
    } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      statement.ptx += '$';
      ++i;
    } else if (c == '$' && i + 1 < text.size() && llvm::isDigit(text[i + 1])) {
      size_t end = i + 1;
      while (end < text.size() && llvm::isDigit(text[end]))
        ++end;
      unsigned number = 0;
      text.slice(i + 1, end).getAsInteger(10, number);
      if (!cudaNumber.count(number))
        return op.emitOpError("refers to operand $")
               << number << ", which it does not have";
      statement.ptx += "%" + std::to_string(cudaNumber[number]);
      i = end - 1;
    } else if (c == '$') {
      return op.emitOpError("uses an operand modifier the CUDA C printer "
                            "does not know");
    } else {
      statement.ptx += c;
    }
  }

  // Outputs: one result, or a struct of them.
  SmallVector<std::string> outputs;
  if (numOutputs) {
    if (op.getNumResults() != 1)
      return op.emitOpError("has outputs but no result");
    Value result = op.getResult(0);
    if (failed(declare(result, op)))
      return failure();
    bool isStruct = isa<LLVM::LLVMStructType>(result.getType());
    if (!isStruct && numOutputs != 1)
      return op.emitOpError("has ")
             << numOutputs << " outputs but a result of type "
             << result.getType();
    for (unsigned i = 0; i < numOutputs; ++i)
      outputs.push_back(isStruct
                            ? expr(result) + ".v[" + std::to_string(i) + "]"
                            : expr(result));
  }
  for (auto [i, c] : llvm::enumerate(outputConstraints)) {
    auto tied = tiedOutput.find(i);
    if (tied != tiedOutput.end()) {
      // A tied input is the output's value on entry.
      *os << outputs[i] << " = " << expr(op.getOperands()[tied->second])
          << ";\n";
      statement.outputs.push_back("\"+" + c.str() + "\"(" + outputs[i] + ")");
    } else {
      statement.outputs.push_back("\"=" + c.str() + "\"(" + outputs[i] + ")");
    }
  }
  for (auto [c, value] : inputs) {
    if (c == "n" && !getConstantIntValue(value))
      return op.emitOpError("has an immediate operand that is not a constant");
    statement.inputs.push_back("\"" + c.str() + "\"(" + expr(value) + ")");
  }
  printAsm(statement);
  return success();
}

LogicalResult KernelPrinter::printLdMatrix(nvgpu::LdMatrixOp op) {
  VectorType type = op.getRes().getType();
  unsigned tiles = op.getNumTiles();
  if (type.getRank() != 2 || type.getDimSize(0) != tiles ||
      type.getDimSize(1) * type.getElementTypeBitWidth() != 32)
    return op.emitOpError("with result type ") << type << " has no CUDA C form";
  FailureOr<std::string> address =
      sharedAddress(op.getSrcMemref(), op.getIndices(), op);
  FailureOr<std::string> vecType = typeName(type, op);
  if (failed(address) || failed(vecType) || failed(declare(op.getRes(), op)))
    return failure();
  // Each thread receives one 32-bit register per 8x8 tile.
  std::string regs = expr(op.getRes()) + "_regs";
  *os << "{\n";
  os->indent();
  helpers.insert(Helper::Vec);
  helpers.insert(Helper::Bitcast);
  *os << "fusec_vec<unsigned, " << tiles << "> " << regs << ";\n";
  AsmStatement statement;
  statement.ptx = llvm::formatv("ldmatrix.sync.aligned.m8n8.x{0}{1}.shared.b16 "
                                "{2}, [%{0}];",
                                tiles, op.getTranspose() ? ".trans" : "",
                                operandList(0, tiles))
                      .str();
  for (unsigned i = 0; i < tiles; ++i)
    statement.outputs.push_back("\"=r\"(" + regs + ".v[" + std::to_string(i) +
                                "])");
  statement.inputs.push_back("\"r\"(" + *address + ")");
  printAsm(statement);
  *os << expr(op.getRes()) << " = fusec_bitcast<" << *vecType << ">(" << regs
      << ");\n";
  os->unindent();
  *os << "}\n";
  return success();
}

LogicalResult KernelPrinter::printAsyncCopy(nvgpu::DeviceAsyncCopyOp op) {
  MemRefType dstType = op.getDst().getType();
  unsigned elementBits = dstType.getElementTypeBitWidth();
  uint64_t bytes = op.getDstElements().getZExtValue() * elementBits / 8;
  if (bytes != 4 && bytes != 8 && bytes != 16)
    return op.emitOpError("copies ") << bytes
                                     << " bytes; cp.async copies 4, "
                                        "8 or 16";
  bool bypassL1 = op.getBypassL1().has_value();
  if (bypassL1 && bytes != 16)
    return op.emitOpError("bypasses L1 for a copy of ")
           << bytes << " bytes; cp.async.cg copies 16";
  FailureOr<std::string> dst =
      sharedAddress(op.getDst(), op.getDstIndices(), op);
  FailureOr<std::string> src =
      element(op.getSrc(), op.getSrcIndices(), op, false);
  if (failed(dst) || failed(src))
    return failure();
  AsmStatement statement;
  statement.ptx = llvm::formatv("cp.async.{0}.shared.global [%0], [%1], {1}",
                                bypassL1 ? "cg" : "ca", bytes)
                      .str();
  statement.inputs = {"\"r\"(" + *dst + ")",
                      "\"l\"(__cvta_generic_to_global(" + *src + "))"};
  if (Value srcElements = op.getSrcElements()) {
    // Bytes past the source's count are zero-filled.
    statement.ptx += ", %2";
    std::string count = expr(srcElements);
    if (elementBits != 8)
      count += " * " + std::to_string(elementBits / 8);
    // A 32-bit register, whatever the width of index (at most 16 bytes).
    statement.inputs.push_back("\"r\"((unsigned)(" + count + "))");
  }
  statement.ptx += ";";
  printAsm(statement);
  // The token stays undefined: fusec orders copies with commit/wait groups,
  // and nothing else may use it.
  return success();
}

/// The PTX name of an MMA operand type.
static std::string mmaTypeName(std::optional<NVVM::MMATypes> ptxType,
                               Type type) {
  if (ptxType)
    return NVVM::stringifyMMATypes(*ptxType).str();
  type = getElementTypeOrSelf(type);
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF32())
    return "f32";
  return "";
}

LogicalResult KernelPrinter::printMma(NVVM::MmaOp op) {
  auto resultType = dyn_cast<LLVM::LLVMStructType>(op.getRes().getType());
  if (!resultType ||
      !llvm::all_of(resultType.getBody(), [](Type t) { return t.isF32(); }) ||
      !llvm::all_of(op.getOperandC().getTypes(),
                    [](Type t) { return t.isF32(); }))
    return op.emitOpError("with other than f32 accumulators has no CUDA C "
                          "form");
  std::string aType =
      mmaTypeName(op.getMultiplicandAPtxType(), op.getOperandA()[0].getType());
  std::string bType =
      mmaTypeName(op.getMultiplicandBPtxType(), op.getOperandB()[0].getType());
  if (aType.empty() || bType.empty() || op.getIntOverflowBehavior())
    return op.emitOpError("with these operand types has no CUDA C form");
  unsigned numD = resultType.getBody().size();
  unsigned numA = op.getOperandA().size(), numB = op.getOperandB().size();
  unsigned numC = op.getOperandC().size();
  NVVM::MMAShapeAttr shape = op.getShape();
  AsmStatement statement;
  statement.sideEffects = false;
  statement.ptx =
      llvm::formatv("mma.sync.aligned.m{0}n{1}k{2}.{3}.{4}.f32.{5}.{6}.f32 "
                    "{7}, {8}, {9}, {10};",
                    shape.getM(), shape.getN(), shape.getK(),
                    NVVM::stringifyMMALayout(op.getLayoutA()),
                    NVVM::stringifyMMALayout(op.getLayoutB()), aType, bType,
                    operandList(0, numD), operandList(numD, numA),
                    operandList(numD + numA, numB),
                    operandList(numD + numA + numB, numC))
          .str();
  if (failed(declare(op.getRes(), op)))
    return failure();
  for (unsigned i = 0; i < numD; ++i)
    statement.outputs.push_back("\"=f\"(" + expr(op.getRes()) + ".v[" +
                                std::to_string(i) + "])");
  // A and B fragments are 32-bit registers: pairs of halves travel as one.
  for (Value v : llvm::concat<Value>(op.getOperandA(), op.getOperandB())) {
    if (isa<VectorType>(v.getType())) {
      helpers.insert(Helper::Bitcast);
      statement.inputs.push_back("\"r\"(fusec_bitcast<unsigned>(" + expr(v) +
                                 "))");
    } else {
      statement.inputs.push_back("\"r\"(" + expr(v) + ")");
    }
  }
  for (Value v : op.getOperandC())
    statement.inputs.push_back("\"f\"(" + expr(v) + ")");
  printAsm(statement);
  return success();
}

LogicalResult KernelPrinter::printWgmma(NVVM::WgmmaMmaAsyncOp op) {
  auto resultType = dyn_cast<LLVM::LLVMStructType>(op.getResults().getType());
  if (op.getTypeD() != NVVM::WGMMATypes::f32 || !resultType)
    return op.emitOpError("with other than f32 accumulators has no CUDA C "
                          "form");
  NVVM::WGMMATypes a = op.getTypeA(), b = op.getTypeB();
  bool halves = a == NVVM::WGMMATypes::f16 || a == NVVM::WGMMATypes::bf16;
  bool floats = halves || a == NVVM::WGMMATypes::tf32 ||
                a == NVVM::WGMMATypes::e4m3 || a == NVVM::WGMMATypes::e5m2;
  if (!floats)
    return op.emitOpError("on integers has no CUDA C form");
  unsigned numD = resultType.getBody().size();
  NVVM::MMAShapeAttr shape = op.getShape();
  auto scale = [](NVVM::WGMMAScaleIn s) {
    return s == NVVM::WGMMAScaleIn::one ? "1" : "-1";
  };
  // As NVVM lowers it: the accumulators read and written in place, scale-d
  // as a predicate, the rest immediates; only 16-bit types transpose.
  std::string immediates =
      llvm::formatv("{0}, {1}", scale(op.getScaleA()), scale(op.getScaleB()));
  if (halves)
    immediates += llvm::formatv(
        ", {0}, {1}", op.getLayoutA() == NVVM::MMALayout::row ? 0 : 1,
        op.getLayoutB() == NVVM::MMALayout::col ? 0 : 1);
  AsmStatement statement;
  statement.ptx =
      llvm::formatv("{\n.reg .pred p;\nsetp.ne.b32 p, {0}, 0;\n"
                    "wgmma.mma_async.sync.aligned.m{1}n{2}k{3}.f32.{4}.{5} "
                    "{6}, %{7}, %{8}, p, {9};\n}",
                    op.getScaleD() == NVVM::WGMMAScaleOut::one ? 1 : 0,
                    shape.getM(), shape.getN(), shape.getK(),
                    NVVM::stringifyWGMMATypes(a), NVVM::stringifyWGMMATypes(b),
                    operandList(0, numD), numD, numD + 1, immediates)
          .str();
  if (failed(assign(op.getResults(), expr(op.getInouts()), op)))
    return failure();
  for (unsigned i = 0; i < numD; ++i)
    statement.outputs.push_back("\"+f\"(" + expr(op.getResults()) + ".v[" +
                                std::to_string(i) + "])");
  statement.inputs = {"\"l\"(" + expr(op.getDescriptorA()) + ")",
                      "\"l\"(" + expr(op.getDescriptorB()) + ")"};
  printAsm(statement);
  return success();
}

LogicalResult
KernelPrinter::printTmaLoad(NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp op) {
  if (op.getMulticastMask() || op.getL2CacheHint() || op.getPredicate() ||
      op.getGroup() || op.getIsCTAOnly())
    return op.emitOpError("with multicast, cache hints, a predicate or a CTA "
                          "group has no CUDA C form");
  bool im2col = op.getMode() == NVVM::TMALoadMode::IM2COL;
  if (!im2col && op.getMode() != NVVM::TMALoadMode::TILE)
    return op.emitOpError("in mode ")
           << NVVM::stringifyTMALoadMode(op.getMode()) << " has no CUDA C form";
  FailureOr<std::string> dst = sharedPointer(op.getDstMem(), op);
  FailureOr<std::string> mbar = sharedPointer(op.getMbar(), op);
  if (failed(dst) || failed(mbar))
    return failure();
  unsigned dims = op.getCoordinates().size();
  unsigned offsets = op.getIm2colOffsets().size();
  AsmStatement statement;
  statement.ptx =
      llvm::formatv("cp.async.bulk.tensor.{0}d.shared::cluster.global.{1}."
                    "mbarrier::complete_tx::bytes [%0], [%1, {2}], [%2]",
                    dims, im2col ? "im2col" : "tile", operandList(3, dims))
          .str();
  if (im2col)
    statement.ptx += ", " + operandList(3 + dims, offsets);
  statement.ptx += ";";
  statement.inputs = {
      *dst, "\"l\"((unsigned long long)" + expr(op.getTmaDescriptor()) + ")",
      *mbar};
  for (Value c : op.getCoordinates())
    statement.inputs.push_back("\"r\"(" + expr(c) + ")");
  for (Value o : op.getIm2colOffsets())
    statement.inputs.push_back("\"h\"(" + expr(o) + ")");
  printAsm(statement);
  return success();
}

//===----------------------------------------------------------------------===//
// The op walk
//===----------------------------------------------------------------------===//

/// The PTX of an op with no operands or results.
static std::string plainPTX(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([](NVVM::CpAsyncCommitGroupOp) { return "cp.async.commit_group;"; })
      .Case([](NVVM::CpAsyncWaitGroupOp wait) {
        return "cp.async.wait_group " + std::to_string(wait.getN()) + ";";
      })
      .Case([](NVVM::FenceMbarrierInitOp) {
        return "fence.mbarrier_init.release.cluster;";
      })
      .Case(
          [](NVVM::WgmmaFenceAlignedOp) { return "wgmma.fence.sync.aligned;"; })
      .Case([](NVVM::WgmmaGroupSyncAlignedOp) {
        return "wgmma.commit_group.sync.aligned;";
      })
      .Case([](NVVM::WgmmaWaitGroupSyncOp wait) {
        return "wgmma.wait_group.sync.aligned " +
               std::to_string(wait.getGroup()) + ";";
      })
      .Case([](NVVM::SetMaxRegisterOp set) {
        return llvm::formatv("setmaxnreg.{0}.sync.aligned.u32 {1};",
                             set.getAction() ==
                                     NVVM::SetMaxRegisterAction::increase
                                 ? "inc"
                                 : "dec",
                             set.getRegCount())
            .str();
      })
      .Case([](nvgpu::DeviceAsyncCreateGroupOp) {
        return "cp.async.commit_group;";
      })
      .Case([](nvgpu::DeviceAsyncWaitOp wait) {
        return "cp.async.wait_group " +
               std::to_string(wait.getNumGroups().value_or(0)) + ";";
      })
      .Default([](Operation *) { return ""; });
}

LogicalResult KernelPrinter::printOp(Operation &op,
                                     ArrayRef<std::string> yieldTo) {
  Operation *o = &op;
  if (isa<arith::ArithDialect>(op.getDialect())) {
    if (auto constant = dyn_cast<arith::ConstantOp>(o))
      return printConstant(constant);
    return printArith(o);
  }
  if (isa<math::MathDialect>(op.getDialect()))
    return printMath(o);
  std::string ptx = plainPTX(o);
  if (!ptx.empty()) {
    AsmStatement statement;
    statement.ptx = ptx;
    printAsm(statement);
    return success();
  }
  auto gpuDim = [](gpu::Dimension d) {
    return gpu::stringifyDimension(d).str();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(o)
      // scf
      .Case([&](scf::ForOp forOp) -> LogicalResult { return printFor(forOp); })
      .Case([&](scf::IfOp ifOp) -> LogicalResult { return printIf(ifOp); })
      .Case([&](scf::WhileOp whileOp) -> LogicalResult {
        return printWhile(whileOp);
      })
      .Case([&](scf::IndexSwitchOp indexSwitch) -> LogicalResult {
        return printIndexSwitch(indexSwitch);
      })
      .Case([&](scf::YieldOp yield) -> LogicalResult {
        printParallelAssign(yieldTo, yield.getOperands());
        return success();
      })
      // gpu
      .Case([&](gpu::ThreadIdOp id) -> LogicalResult {
        return assign(id, "threadIdx." + gpuDim(id.getDimension()), o);
      })
      .Case([&](gpu::BlockIdOp id) -> LogicalResult {
        return assign(id, "blockIdx." + gpuDim(id.getDimension()), o);
      })
      .Case([&](gpu::BlockDimOp dim) -> LogicalResult {
        return assign(dim, "blockDim." + gpuDim(dim.getDimension()), o);
      })
      .Case([&](gpu::GridDimOp dim) -> LogicalResult {
        return assign(dim, "gridDim." + gpuDim(dim.getDimension()), o);
      })
      .Case([&](gpu::BarrierOp) -> LogicalResult {
        *os << "__syncthreads();\n";
        return success();
      })
      .Case([&](gpu::ShuffleOp shuffle) -> LogicalResult {
        // CUDA's segmented width and MLIR's clamp agree for whole warps.
        std::optional<int64_t> width = getConstantIntValue(shuffle.getWidth());
        if (width != 32 || !shuffle.getValid().use_empty())
          return shuffle.emitOpError("over other than a whole warp, or whose "
                                     "validity is used, has no CUDA C form");
        StringRef name;
        switch (shuffle.getMode()) {
        case gpu::ShuffleMode::XOR:
          name = "__shfl_xor_sync";
          break;
        case gpu::ShuffleMode::DOWN:
          name = "__shfl_down_sync";
          break;
        case gpu::ShuffleMode::UP:
          name = "__shfl_up_sync";
          break;
        case gpu::ShuffleMode::IDX:
          name = "__shfl_sync";
          break;
        }
        return assign(shuffle.getShuffleResult(),
                      (name + "(0xffffffff, " + expr(shuffle.getValue()) +
                       ", " + expr(shuffle.getOffset()) + ", 32)")
                          .str(),
                      o);
      })
      .Case([&](gpu::DynamicSharedMemoryOp shared) -> LogicalResult {
        helpers.insert(Helper::SharedMemory);
        exprs[shared] = "fusec_smem";
        return success();
      })
      .Case([&](gpu::ReturnOp) -> LogicalResult {
        if (op.getNextNode() || !isa<gpu::GPUFuncOp>(op.getParentOp()))
          *os << "return;\n";
        return success();
      })
      // memref and vector
      .Case([&](memref::LoadOp load) -> LogicalResult {
        FailureOr<std::string> e =
            element(load.getMemRef(), load.getIndices(), o, true);
        return failed(e) ? failure() : assign(load, *e, o);
      })
      .Case([&](memref::StoreOp store) -> LogicalResult {
        FailureOr<std::string> e =
            element(store.getMemRef(), store.getIndices(), o, true);
        if (failed(e))
          return failure();
        *os << *e << " = " << expr(store.getValue()) << ";\n";
        return success();
      })
      .Case([&](memref::ViewOp view) -> LogicalResult {
        if (!view.getSizes().empty())
          return view.emitOpError("with dynamic sizes has no CUDA C form");
        FailureOr<std::string> type = typeName(view.getType(), o);
        if (failed(type))
          return failure();
        std::string base = expr(view.getSource());
        std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
        if (shift != 0)
          base += " + " + expr(view.getByteShift());
        return assign(view, "(" + *type + ")(" + base + ")", o);
      })
      .Case(
          [&](memref::ExtractAlignedPointerAsIndexOp extract) -> LogicalResult {
            // An index holds a shared-memory address, not a 64-bit pointer.
            if (!isShared(cast<MemRefType>(extract.getSource().getType())))
              return extract.emitOpError(
                  "of a buffer outside shared memory has "
                  "no CUDA C form");
            return assign(extract,
                          "(int)__cvta_generic_to_shared(" +
                              expr(extract.getSource()) + ")",
                          o);
          })
      .Case([&](vector::LoadOp load) -> LogicalResult {
        return printVectorAccess(o, load.getBase(), load.getIndices(),
                                 load.getVectorType(), load.getAlignment(),
                                 nullptr);
      })
      .Case([&](vector::StoreOp store) -> LogicalResult {
        return printVectorAccess(o, store.getBase(), store.getIndices(),
                                 store.getVectorType(), store.getAlignment(),
                                 store.getValueToStore());
      })
      .Case([&](vector::ExtractOp extract) -> LogicalResult {
        std::string e = expr(extract.getSource());
        for (OpFoldResult position : extract.getMixedPosition()) {
          if (auto attr = dyn_cast<Attribute>(position))
            e += ".v[" + std::to_string(cast<IntegerAttr>(attr).getInt()) + "]";
          else
            e += ".v[" + expr(cast<Value>(position)) + "]";
        }
        return assign(extract, e, o);
      })
      .Case([&](vector::InsertOp insert) -> LogicalResult {
        if (failed(assign(insert, expr(insert.getDest()), o)))
          return failure();
        std::string e = expr(insert);
        for (OpFoldResult position : insert.getMixedPosition()) {
          if (auto attr = dyn_cast<Attribute>(position))
            e += ".v[" + std::to_string(cast<IntegerAttr>(attr).getInt()) + "]";
          else
            e += ".v[" + expr(cast<Value>(position)) + "]";
        }
        *os << e << " = " << expr(insert.getValueToStore()) << ";\n";
        return success();
      })
      .Case([&](vector::FromElementsOp from) -> LogicalResult {
        if (from.getType().getRank() != 1)
          return from.emitOpError("of rank ")
                 << from.getType().getRank() << " has no CUDA C form";
        SmallVector<std::string> elements;
        for (Value v : from.getElements())
          elements.push_back(expr(v));
        return assign(from, "{{" + llvm::join(elements, ", ") + "}}", o);
      })
      .Case([&](vector::BroadcastOp broadcast) -> LogicalResult {
        if (isa<VectorType>(broadcast.getSourceType()) ||
            broadcast.getResultVectorType().getRank() != 1)
          return broadcast.emitOpError("of a vector has no CUDA C form");
        SmallVector<std::string> elements(
            broadcast.getResultVectorType().getNumElements(),
            expr(broadcast.getSource()));
        return assign(broadcast, "{{" + llvm::join(elements, ", ") + "}}", o);
      })
      .Case([&](vector::BitCastOp cast) -> LogicalResult {
        FailureOr<std::string> type = typeName(cast.getType(), o);
        if (failed(type))
          return failure();
        helpers.insert(Helper::Bitcast);
        return assign(
            cast,
            "fusec_bitcast<" + *type + ">(" + expr(cast.getSource()) + ")", o);
      })
      // llvm
      .Case([&](LLVM::ExtractValueOp extract) -> LogicalResult {
        std::string e = expr(extract.getContainer());
        for (int64_t i : extract.getPosition())
          e += ".v[" + std::to_string(i) + "]";
        return assign(extract, e, o);
      })
      .Case([&](LLVM::InsertValueOp insert) -> LogicalResult {
        if (failed(assign(insert, expr(insert.getContainer()), o)))
          return failure();
        std::string e = expr(insert);
        for (int64_t i : insert.getPosition())
          e += ".v[" + std::to_string(i) + "]";
        *os << e << " = " << expr(insert.getValue()) << ";\n";
        return success();
      })
      .Case<LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp>(
          [&](Operation *) -> LogicalResult {
            Type type = op.getResult(0).getType();
            if (type.isIntOrIndexOrFloat()) {
              exprs[op.getResult(0)] = literal(
                  type.isIntOrIndex() ? Attribute(IntegerAttr::get(type, 0))
                                      : Attribute(FloatAttr::get(type, 0.0)),
                  type);
              return success();
            }
            return assign(op.getResult(0), "{}", o);
          })
      .Case([&](LLVM::IntToPtrOp cast) -> LogicalResult {
        FailureOr<std::string> type = typeName(cast.getType(), o);
        if (failed(type))
          return failure();
        return assign(cast, "(" + *type + ")" + expr(cast.getArg()), o);
      })
      .Case([&](LLVM::AddrSpaceCastOp cast) -> LogicalResult {
        // A shared::cta address is the same shared::cluster address.
        if (cast.getArg().getType() !=
                LLVM::LLVMPointerType::get(
                    op.getContext(),
                    static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared)) ||
            cast.getType() !=
                LLVM::LLVMPointerType::get(
                    op.getContext(), static_cast<unsigned>(
                                         NVVM::NVVMMemorySpace::SharedCluster)))
          return cast.emitOpError("other than shared::cta to shared::cluster "
                                  "has no CUDA C form");
        exprs[cast] = expr(cast.getArg());
        return success();
      })
      .Case([&](LLVM::InlineAsmOp inlineAsm) -> LogicalResult {
        return printInlineAsm(inlineAsm);
      })
      // nvgpu and nvvm
      .Case([&](nvgpu::LdMatrixOp ld) -> LogicalResult {
        return printLdMatrix(ld);
      })
      .Case([&](nvgpu::DeviceAsyncCopyOp copy) -> LogicalResult {
        return printAsyncCopy(copy);
      })
      .Case([&](NVVM::MmaOp mma) -> LogicalResult { return printMma(mma); })
      .Case([&](NVVM::WgmmaMmaAsyncOp mma) -> LogicalResult {
        return printWgmma(mma);
      })
      .Case([&](NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp load)
                -> LogicalResult { return printTmaLoad(load); })
      .Case([&](NVVM::MBarrierInitOp init) -> LogicalResult {
        if (init.getPredicate())
          return init.emitOpError("with a predicate has no CUDA C form");
        FailureOr<std::string> addr = sharedPointer(init.getAddr(), o);
        if (failed(addr))
          return failure();
        printAsm({"mbarrier.init.shared.b64 [%0], %1;",
                  {},
                  {*addr, "\"r\"(" + expr(init.getCount()) + ")"}});
        return success();
      })
      .Case([&](NVVM::MBarrierArriveOp arrive) -> LogicalResult {
        FailureOr<std::string> addr = sharedPointer(arrive.getAddr(), o);
        if (failed(addr))
          return failure();
        if (arrive.getScope() != NVVM::MemScopeKind::CTA || arrive.getRelaxed())
          return arrive.emitOpError("other than release.cta has no CUDA C "
                                    "form");
        AsmStatement statement;
        std::string count =
            arrive.getCount() ? std::string(", %2") : std::string();
        if (Value res = arrive.getRes()) {
          if (failed(declare(res, o)))
            return failure();
          statement.ptx = "mbarrier.arrive.shared.b64 %0, [%1]" + count + ";";
          statement.outputs.push_back("\"=l\"(" + expr(res) + ")");
        } else {
          if (!count.empty())
            count = ", %1";
          statement.ptx = "{\n.reg .b64 state;\nmbarrier.arrive.shared.b64 "
                          "state, [%0]" +
                          count + ";\n}";
        }
        statement.inputs.push_back(*addr);
        if (Value c = arrive.getCount())
          statement.inputs.push_back("\"r\"(" + expr(c) + ")");
        printAsm(statement);
        return success();
      })
      .Case([&](NVVM::MBarrierArriveExpectTxOp arrive) -> LogicalResult {
        FailureOr<std::string> addr = sharedPointer(arrive.getAddr(), o);
        if (failed(addr))
          return failure();
        if (arrive.getScope() != NVVM::MemScopeKind::CTA ||
            arrive.getRelaxed() || arrive.getPredicate() || arrive.getRes())
          return arrive.emitOpError("other than release.cta without a "
                                    "predicate or result has no CUDA C form");
        printAsm({"{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared.b64 "
                  "state, [%0], %1;\n}",
                  {},
                  {*addr, "\"r\"(" + expr(arrive.getTxcount()) + ")"}});
        return success();
      })
      .Case([&](NVVM::MBarrierTryWaitParityOp wait) -> LogicalResult {
        // Retries until the phase completes, as the NVVM lowering does.
        FailureOr<std::string> addr = sharedPointer(wait.getAddr(), o);
        if (failed(addr))
          return failure();
        printAsm({"{\n.reg .pred P1;\nLAB_WAIT:\n"
                  "mbarrier.try_wait.parity.shared.b64 P1, [%0], %1, %2;\n"
                  "@P1 bra.uni DONE;\nbra.uni LAB_WAIT;\nDONE:\n}",
                  {},
                  {*addr, "\"r\"(" + expr(wait.getPhase()) + ")",
                   "\"r\"(" + expr(wait.getTicks()) + ")"}});
        return success();
      })
      .Case([&](NVVM::BarrierOp barrier) -> LogicalResult {
        if (barrier.getReductionOp() || barrier.getRes())
          return barrier.emitOpError("with a reduction has no CUDA C form");
        Value id = barrier.getBarrierId();
        Value count = barrier.getNumberOfThreads();
        if (!id && !count) {
          *os << "__syncthreads();\n";
          return success();
        }
        AsmStatement statement;
        statement.inputs.push_back("\"r\"(" + (id ? expr(id) : "0") + ")");
        statement.ptx = "bar.sync %0";
        if (count) {
          statement.ptx += ", %1";
          statement.inputs.push_back("\"r\"(" + expr(count) + ")");
        }
        statement.ptx += ";";
        printAsm(statement);
        return success();
      })
      .Case([&](NVVM::BarrierArriveOp arrive) -> LogicalResult {
        printAsm(
            {"bar.arrive %0, %1;",
             {},
             {"\"r\"(" +
                  (arrive.getBarrierId() ? expr(arrive.getBarrierId()) : "0") +
                  ")",
              "\"r\"(" + expr(arrive.getNumberOfThreads()) + ")"}});
        return success();
      })
      .Default([&](Operation *) -> LogicalResult {
        return op.emitOpError("is not known to the CUDA C printer");
      });
}

//===----------------------------------------------------------------------===//
// Kernels and the translation unit
//===----------------------------------------------------------------------===//

LogicalResult KernelPrinter::printKernel(gpu::GPUFuncOp func,
                                         raw_ostream &out) {
  if (!func.isKernel())
    return func.emitOpError("is not a kernel; the CUDA C printer prints "
                            "kernels only");
  if (func.getNumWorkgroupAttributions() || func.getNumPrivateAttributions())
    return func.emitOpError("has memory attributions, which the CUDA C "
                            "printer does not know (fusec kernels use "
                            "dynamic shared memory)");
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("has more than one block");
  raw_indented_ostream indented(out);
  os = &indented;
  indexBits = DataLayout::closest(func).getTypeSizeInBits(
      IndexType::get(func.getContext()));

  // What the kernel is, for people reading it.
  *os << "// " << func.getName();
  if (auto family = func->getAttrOfType<StringAttr>("fusec.family"))
    *os << ": " << family.getValue();
  if (Attribute tile = func->getAttr("fusec.tile"))
    *os << ", " << tile;
  *os << "\n";

  // The PTX backend's ABI: a 64-bit pointer per buffer, 128-byte tensor
  // maps by value.
  llvm::SmallDenseSet<int64_t> tensorMaps;
  if (auto indices = func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapArgsAttr))
    tensorMaps.insert(indices.asArrayRef().begin(), indices.asArrayRef().end());
  SmallVector<std::string> params;
  for (BlockArgument arg : func.getArguments()) {
    std::string name = define(arg);
    if (tensorMaps.contains(arg.getArgNumber())) {
      helpers.insert(Helper::TensorMap);
      params.push_back("const __grid_constant__ fusec_tensor_map " + name);
      // Its generic address, which TMA copies take.
      exprs[arg] = "&" + name;
      continue;
    }
    if (!isa<MemRefType>(arg.getType()))
      return func.emitOpError("has parameter ")
             << arg.getArgNumber() << " of type " << arg.getType()
             << ", which is neither a buffer nor a tensor map";
    FailureOr<std::string> type = typeName(arg.getType(), func);
    if (failed(type))
      return failure();
    params.push_back(*type + " " + name);
  }

  *os << "extern \"C\" __global__ void ";
  if (std::optional<ArrayRef<int32_t>> block = func.getKnownBlockSize()) {
    int64_t threads = 1;
    for (int32_t d : *block)
      threads *= d;
    *os << "__launch_bounds__(" << threads;
    if (auto min = func->getAttrOfType<IntegerAttr>("nvvm.minctasm"))
      *os << ", " << min.getInt();
    *os << ") ";
  }
  *os << func.getName() << "(" << llvm::join(params, ", ") << ") {\n";
  os->indent();
  if (failed(printBlock(func.getBody().front())))
    return failure();
  if (undefined) {
    Operation *user = *undefined.getUsers().begin();
    return user->emitOpError("uses a value the CUDA C printer has no "
                             "expression for (operand of type ")
           << undefined.getType() << ")";
  }
  os->unindent();
  *os << "}\n";
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
        result.back().text = StringRef(begin, end - begin).ltrim("\r\n").rtrim();
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
      KernelPrinter printer(state, helpers);
      if (!kernels.empty())
        kernelStream << "\n";
      if (failed(printer.printKernel(func, kernelStream)))
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
