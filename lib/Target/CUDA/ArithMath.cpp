//===- ArithMath.cpp - arith and math ops as CUDA C -----------------------===//
//
// One C expression per element: integer ops as C's operators (unsigned ones
// on unsigned operands), f32/f64 +, -, *, / as __fadd_rn and friends, math
// ops as CUDA's accurate functions, casts as C casts or the prelude's f16 and
// bf16 conversions. f16 and bf16 are storage types: only casts take them.
//
//===----------------------------------------------------------------------===//

#include "CUDAEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace fusec::cuda;

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

namespace {
/// The C expression of one element from its operands' expressions.
using ScalarFn = llvm::function_ref<std::string(ArrayRef<std::string>)>;
} // namespace

/// Prints an elementwise op: `scalar` gives the C expression of one element
/// from its operands' expressions; vector results apply it per element.
static LogicalResult printElementwise(Emitter &emitter, Operation *op,
                                      ScalarFn scalar) {
  Value result = op->getResult(0);
  auto vector = dyn_cast<VectorType>(result.getType());
  if (!vector) {
    SmallVector<std::string> operands;
    for (Value v : op->getOperands())
      operands.push_back(emitter.expr(v));
    return emitter.assign(result, scalar(operands), op);
  }
  if (vector.getRank() != 1)
    return op->emitOpError("on a vector of rank ")
           << vector.getRank() << " has no CUDA C form";
  if (failed(emitter.declare(result, op)))
    return failure();
  for (int64_t i = 0, e = vector.getNumElements(); i < e; ++i) {
    SmallVector<std::string> operands;
    for (Value v : op->getOperands())
      operands.push_back(isa<VectorType>(v.getType())
                             ? emitter.expr(v) + ".v[" + std::to_string(i) + "]"
                             : emitter.expr(v));
    emitter.ostream() << emitter.expr(result) << ".v[" << i
                      << "] = " << scalar(operands) << ";\n";
  }
  return success();
}

/// The element type of `op`'s result.
static Type resultType(Operation *op) {
  return getElementTypeOrSelf(op->getResult(0).getType());
}

/// The element type of `op`'s first operand.
static Type operandType(Operation *op) {
  return getElementTypeOrSelf(op->getOperand(0).getType());
}

/// `a c b`.
static LogicalResult printBinary(Emitter &emitter, Operation *op, StringRef c) {
  return printElementwise(emitter, op, [c](ArrayRef<std::string> o) {
    return o[0] + " " + c.str() + " " + o[1];
  });
}

/// `name(a, b, ...)`.
static LogicalResult printCall(Emitter &emitter, Operation *op,
                               StringRef name) {
  return printElementwise(emitter, op, [name](ArrayRef<std::string> o) {
    return name.str() + "(" + llvm::join(o, ", ") + ")";
  });
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

static LogicalResult printOperation(Emitter &emitter, arith::ConstantOp op) {
  Type type = op.getType();
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
    auto vector = dyn_cast<VectorType>(type);
    if (!vector || vector.getRank() != 1)
      return op.emitOpError("of type ") << type << " has no CUDA C form";
    SmallVector<std::string> elements;
    for (Attribute element : dense.getValues<Attribute>())
      elements.push_back(emitter.literal(element, vector.getElementType()));
    FailureOr<std::string> typeText = emitter.typeName(type, op);
    if (failed(typeText))
      return failure();
    emitter.ostream() << "const " << *typeText << " "
                      << emitter.define(op.getResult()) << " = {{"
                      << llvm::join(elements, ", ") << "}};\n";
    return success();
  }
  std::string text = emitter.literal(op.getValue(), type);
  if (text.empty())
    return op.emitOpError("has no CUDA C form");
  emitter.bind(op.getResult(), text);
  return success();
}

/// A zero, undef or poison value: zero.
static LogicalResult printZero(Emitter &emitter, Operation *op) {
  Value result = op->getResult(0);
  Type type = result.getType();
  if (type.isIntOrIndexOrFloat()) {
    emitter.bind(result,
                 emitter.literal(type.isIntOrIndex()
                                     ? Attribute(IntegerAttr::get(type, 0))
                                     : Attribute(FloatAttr::get(type, 0.0)),
                                 type));
    return success();
  }
  return emitter.assign(result, "{}", op);
}

//===----------------------------------------------------------------------===//
// Integer arithmetic
//===----------------------------------------------------------------------===//

/// Operand `i` of `op`, whose C expression is `e`, as unsigned: vector
/// elements through a cast, scalars through unsignedExpr (which keeps
/// literals readable).
static std::string unsignedOperand(Emitter &emitter, Operation *op, unsigned i,
                                   StringRef e) {
  if (!isa<VectorType>(op->getResult(0).getType()))
    return emitter.unsignedExpr(op->getOperand(i));
  return "(" + emitter.unsignedTypeName(operandType(op)) + ")" + e.str();
}

/// `a c b` on unsigned operands.
static LogicalResult printUnsignedBinary(Emitter &emitter, Operation *op,
                                         StringRef c) {
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return unsignedOperand(emitter, op, 0, o[0]) + " " + c.str() + " " +
           unsignedOperand(emitter, op, 1, o[1]);
  });
}

/// Whether `op`'s operands are i1, on which bitwise ops are logical ones.
static bool isBool(Emitter &emitter, Operation *op) {
  Type type = operandType(op);
  return emitter.bitWidth(type) == 1 && !isa<FloatType>(type);
}

/// The integer ops that are one C operator: +, -, ..., on unsigned operands
/// for divui and remui, logical on i1.
static LogicalResult printIntegerOperator(Emitter &emitter, Operation *op) {
  bool logical = isBool(emitter, op);
  StringRef c =
      llvm::TypeSwitch<Operation *, StringRef>(op)
          .Case([](arith::AddIOp) { return "+"; })
          .Case([](arith::SubIOp) { return "-"; })
          .Case([](arith::MulIOp) { return "*"; })
          .Case<arith::DivSIOp, arith::DivUIOp>([](Operation *) { return "/"; })
          .Case<arith::RemSIOp, arith::RemUIOp>([](Operation *) { return "%"; })
          .Case([&](arith::AndIOp) { return logical ? "&&" : "&"; })
          .Case([&](arith::OrIOp) { return logical ? "||" : "|"; })
          .Case([&](arith::XOrIOp) { return logical ? "!=" : "^"; })
          .Case([](arith::ShLIOp) { return "<<"; })
          .Case([](arith::ShRSIOp) { return ">>"; });
  if (isa<arith::DivUIOp, arith::RemUIOp>(op))
    return printUnsignedBinary(emitter, op, c);
  return printBinary(emitter, op, c);
}

/// min and max, signed or unsigned.
static LogicalResult printIntegerMinMax(Emitter &emitter, Operation *op) {
  StringRef name = isa<arith::MinSIOp, arith::MinUIOp>(op) ? "min" : "max";
  if (!isa<arith::MinUIOp, arith::MaxUIOp>(op))
    return printCall(emitter, op, name);
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return name.str() + "(" + unsignedOperand(emitter, op, 0, o[0]) + ", " +
           unsignedOperand(emitter, op, 1, o[1]) + ")";
  });
}

static LogicalResult printOperation(Emitter &emitter, arith::CeilDivUIOp op) {
  // a == 0 ? 0 : (a - 1) / b + 1, as arith defines it.
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return o[0] + " == 0 ? 0 : (" + unsignedOperand(emitter, op, 0, o[0]) +
           " - 1) / " + unsignedOperand(emitter, op, 1, o[1]) + " + 1";
  });
}

/// ceildivsi and floordivsi: C's quotient (rounded toward zero), plus one
/// or minus one where it was rounded the wrong way.
static LogicalResult printSignedRoundedDivision(Emitter &emitter,
                                                Operation *op) {
  bool ceil = isa<arith::CeilDivSIOp>(op);
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return o[0] + " / " + o[1] + (ceil ? " + (" : " - (") + o[0] + " % " +
           o[1] + " != 0 && (" + o[0] + " < 0) " + (ceil ? "==" : "!=") + " (" +
           o[1] + " < 0))";
  });
}

static LogicalResult printOperation(Emitter &emitter, arith::ShRUIOp op) {
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return unsignedOperand(emitter, op, 0, o[0]) + " >> " + o[1];
  });
}

//===----------------------------------------------------------------------===//
// Comparisons and select
//===----------------------------------------------------------------------===//

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

static LogicalResult printOperation(Emitter &emitter, arith::CmpIOp op) {
  arith::CmpIPredicate predicate = op.getPredicate();
  std::string c = cmpiOperator(predicate);
  if (!isUnsigned(predicate))
    return printBinary(emitter, op, c);
  return printUnsignedBinary(emitter, op, c);
}

static LogicalResult printOperation(Emitter &emitter, arith::CmpFOp op) {
  Type type = operandType(op);
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return cmpfExpr(op.getPredicate(), widened(type, o[0]),
                    widened(type, o[1]));
  });
}

static LogicalResult printOperation(Emitter &emitter, arith::SelectOp op) {
  // A scalar condition selects whole vectors (C's ?: takes structs).
  if (!isa<VectorType>(op.getCondition().getType()))
    return emitter.assign(op.getResult(),
                          emitter.expr(op.getCondition()) + " ? " +
                              emitter.expr(op.getTrueValue()) + " : " +
                              emitter.expr(op.getFalseValue()),
                          op);
  return printElementwise(emitter, op, [](ArrayRef<std::string> o) {
    return o[0] + " ? " + o[1] + " : " + o[2];
  });
}

//===----------------------------------------------------------------------===//
// Float arithmetic
//===----------------------------------------------------------------------===//

/// f16 and bf16 are storage types in fusec's kernels: all arithmetic is on
/// f32 (or f64).
static LogicalResult emitNoHalfArithmetic(Operation *op) {
  return op->emitOpError("on ")
         << resultType(op) << " has no CUDA C form (fusec computes in f32)";
}

static bool isWide(Type type) { return type.isF32() || type.isF64(); }

/// The CUDA function that rounds `a op b` once in `type` (f32 or f64) and
/// is never contracted into an FMA.
static std::string roundedBinary(Type type, StringRef op, StringRef a,
                                 StringRef b) {
  return ((type.isF32() ? "__f" : "__d") + op + "_rn(" + a + ", " + b + ")")
      .str();
}

/// addf, subf, mulf and divf, rounded once.
static LogicalResult printRounded(Emitter &emitter, Operation *op) {
  Type type = resultType(op);
  if (!isWide(type))
    return emitNoHalfArithmetic(op);
  StringRef name = llvm::TypeSwitch<Operation *, StringRef>(op)
                       .Case([](arith::AddFOp) { return "add"; })
                       .Case([](arith::SubFOp) { return "sub"; })
                       .Case([](arith::MulFOp) { return "mul"; })
                       .Case([](arith::DivFOp) { return "div"; });
  // An f32 division allowed to approximate (afn) is div.approx.f32, as
  // NVPTX makes it on the PTX path.
  auto div = dyn_cast<arith::DivFOp>(op);
  if (div && type.isF32() &&
      arith::bitEnumContainsAll(div.getFastmath(),
                                arith::FastMathFlags::afn))
    return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
      return "__fdividef(" + o[0] + ", " + o[1] + ")";
    });
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return roundedBinary(type, name, o[0], o[1]);
  });
}

/// remf, maxnumf and minnumf: CUDA's f32 or f64 function. maxnumf and
/// minnumf give the other operand when one is NaN: max.f32, as fmaxf.
static LogicalResult printFloatCall(Emitter &emitter, Operation *op) {
  Type type = resultType(op);
  if (!isWide(type))
    return emitNoHalfArithmetic(op);
  bool f32 = type.isF32();
  StringRef name =
      llvm::TypeSwitch<Operation *, StringRef>(op)
          .Case([&](arith::RemFOp) { return f32 ? "fmodf" : "fmod"; })
          .Case([&](arith::MaxNumFOp) { return f32 ? "fmaxf" : "fmax"; })
          .Case([&](arith::MinNumFOp) { return f32 ? "fminf" : "fmin"; });
  return printCall(emitter, op, name);
}

static LogicalResult printOperation(Emitter &emitter, arith::NegFOp op) {
  if (!isWide(resultType(op)))
    return emitNoHalfArithmetic(op);
  return printElementwise(emitter, op,
                          [](ArrayRef<std::string> o) { return "-" + o[0]; });
}

/// maximumf and minimumf: NaN-propagating, max.NaN and min.NaN as the NVPTX
/// backend selects.
static LogicalResult printNaNMinMax(Emitter &emitter, Operation *op) {
  if (!resultType(op).isF32())
    return emitNoHalfArithmetic(op);
  bool max = isa<arith::MaximumFOp>(op);
  emitter.require(max ? Helper::MaximumF : Helper::MinimumF);
  return printCall(emitter, op, max ? "fusec_maximumf" : "fusec_minimumf");
}

//===----------------------------------------------------------------------===//
// Casts
//===----------------------------------------------------------------------===//

static LogicalResult emitNoCast(Operation *op) {
  return op->emitOpError("from ") << operandType(op) << " to " << resultType(op)
                                  << " has no CUDA C form";
}

/// `name(a)`.
static LogicalResult printCastCall(Emitter &emitter, Operation *op,
                                   StringRef name) {
  return printElementwise(emitter, op, [name](ArrayRef<std::string> o) {
    return name.str() + "(" + o[0] + ")";
  });
}

/// index_cast, extsi and trunci, and zero-extending index_castui and extui:
/// widens from the operand's signed or unsigned type, truncates by
/// converting.
static LogicalResult printIntCast(Emitter &emitter, Operation *op) {
  bool zeroExtend = isa<arith::IndexCastUIOp, arith::ExtUIOp>(op);
  Type from = operandType(op), to = resultType(op);
  std::string toName = emitter.scalarTypeName(to);
  return printElementwise(
      emitter, op, [&](ArrayRef<std::string> o) -> std::string {
        unsigned fromWidth = emitter.bitWidth(from),
                 toWidth = emitter.bitWidth(to);
        if (fromWidth == toWidth)
          return o[0];
        if (toWidth == 1)
          return "(" + o[0] + " & 1) != 0";
        if (fromWidth < toWidth && zeroExtend && fromWidth > 1)
          return "(" + toName + ")(" + emitter.unsignedTypeName(from) + ")" +
                 o[0];
        return "(" + toName + ")" + o[0];
      });
}

static LogicalResult printOperation(Emitter &emitter, arith::ExtFOp op) {
  Type from = operandType(op), to = resultType(op);
  if (from.isF16() && to.isF32())
    return printCastCall(emitter, op, "fusec_half2float");
  if (from.isBF16() && to.isF32())
    return printCastCall(emitter, op, "fusec_bfloat162float");
  if (from.isF32() && to.isF64())
    return printElementwise(
        emitter, op, [](ArrayRef<std::string> o) { return "(double)" + o[0]; });
  return emitNoCast(op);
}

static LogicalResult printOperation(Emitter &emitter, arith::TruncFOp op) {
  // Round to nearest even, arith's default and the only mode fusec uses.
  if (op.getRoundingmode() &&
      *op.getRoundingmode() != arith::RoundingMode::to_nearest_even)
    return op.emitOpError("with a rounding mode other than "
                          "to_nearest_even has no CUDA C form");
  Type from = operandType(op), to = resultType(op);
  if (from.isF32() && to.isF16())
    return printCastCall(emitter, op, "fusec_float2half_rn");
  if (from.isF32() && to.isBF16())
    return printCastCall(emitter, op, "fusec_float2bfloat16_rn");
  if (from.isF64() && to.isF32())
    return printCastCall(emitter, op, "__double2float_rn");
  return emitNoCast(op);
}

static LogicalResult printOperation(Emitter &emitter, arith::SIToFPOp op) {
  Type to = resultType(op);
  if (!to.isF32() && !to.isF64())
    return emitNoCast(op);
  std::string toName = emitter.scalarTypeName(to);
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return "(" + toName + ")" + o[0];
  });
}

static LogicalResult printOperation(Emitter &emitter, arith::UIToFPOp op) {
  Type from = operandType(op), to = resultType(op);
  if (!to.isF32() && !to.isF64())
    return emitNoCast(op);
  std::string toName = emitter.scalarTypeName(to);
  return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
    return "(" + toName + ")(" + emitter.unsignedTypeName(from) + ")" + o[0];
  });
}

/// fptosi and fptoui: round toward zero; out of range saturates as cvt.rzi
/// does.
static LogicalResult printFloatToInt(Emitter &emitter, Operation *op) {
  if (!operandType(op).isF32())
    return emitNoCast(op);
  bool isSigned = isa<arith::FPToSIOp>(op);
  switch (emitter.bitWidth(resultType(op))) {
  case 32:
    return printCastCall(emitter, op,
                         isSigned ? "__float2int_rz" : "(int)__float2uint_rz");
  case 64:
    return printCastCall(
        emitter, op, isSigned ? "__float2ll_rz" : "(long long)__float2ull_rz");
  default:
    return emitNoCast(op);
  }
}

static LogicalResult printOperation(Emitter &emitter, arith::BitcastOp op) {
  Type from = operandType(op), to = resultType(op);
  if (from.isF32() && to.isInteger(32))
    return printCastCall(emitter, op, "__float_as_int");
  if (from.isInteger(32) && to.isF32())
    return printCastCall(emitter, op, "__int_as_float");
  if ((from.isF16() || from.isBF16()) && to.isInteger(16))
    return printElementwise(emitter, op, [](ArrayRef<std::string> o) {
      return "(short)" + o[0] + ".bits";
    });
  if (from.isInteger(16) && (to.isF16() || to.isBF16())) {
    std::string toName = emitter.scalarTypeName(to);
    return printElementwise(emitter, op, [&](ArrayRef<std::string> o) {
      return toName + "{(unsigned short)" + o[0] + "}";
    });
  }
  return emitNoCast(op);
}

//===----------------------------------------------------------------------===//
// math
//===----------------------------------------------------------------------===//

/// CUDA's accurate functions: the libdevice functions the PTX backend calls.
/// The square root rounds correctly whatever NVRTC's flags say.
static LogicalResult printMath(Emitter &emitter, Operation *op) {
  Type type = resultType(op);
  if (!type.isF32())
    return op->emitOpError("on ") << type << " has no CUDA C form";
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
                       .Case([](math::CopySignOp) { return "copysignf"; });
  return printCall(emitter, op, name);
}

//===----------------------------------------------------------------------===//
// The area's dispatch
//===----------------------------------------------------------------------===//

std::optional<LogicalResult> fusec::cuda::printArithMathOp(Emitter &emitter,
                                                           Operation &op) {
  auto print = [&](auto op) -> LogicalResult {
    return printOperation(emitter, op);
  };
  return llvm::TypeSwitch<Operation *, std::optional<LogicalResult>>(&op)
      .Case<arith::ConstantOp, arith::CeilDivUIOp, arith::ShRUIOp,
            arith::CmpIOp, arith::CmpFOp, arith::SelectOp, arith::NegFOp,
            arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
            arith::BitcastOp>(print)
      .Case<LLVM::ZeroOp, LLVM::UndefOp, LLVM::PoisonOp>(
          printFamily(emitter, printZero))
      .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
            arith::DivUIOp, arith::RemSIOp, arith::RemUIOp, arith::AndIOp,
            arith::OrIOp, arith::XOrIOp, arith::ShLIOp, arith::ShRSIOp>(
          printFamily(emitter, printIntegerOperator))
      .Case<arith::MinSIOp, arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp>(
          printFamily(emitter, printIntegerMinMax))
      .Case<arith::CeilDivSIOp, arith::FloorDivSIOp>(
          printFamily(emitter, printSignedRoundedDivision))
      .Case<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp>(
          printFamily(emitter, printRounded))
      .Case<arith::RemFOp, arith::MaxNumFOp, arith::MinNumFOp>(
          printFamily(emitter, printFloatCall))
      .Case<arith::MaximumFOp, arith::MinimumFOp>(
          printFamily(emitter, printNaNMinMax))
      .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp, arith::TruncIOp>(printFamily(emitter, printIntCast))
      .Case<arith::FPToSIOp, arith::FPToUIOp>(
          printFamily(emitter, printFloatToInt))
      .Case<math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp, math::Log2Op,
            math::Log1pOp, math::TanhOp, math::ErfOp, math::RsqrtOp,
            math::SqrtOp, math::FloorOp, math::CeilOp, math::RoundOp,
            math::RoundEvenOp, math::TruncOp, math::AbsFOp, math::SinOp,
            math::CosOp, math::PowFOp, math::FmaOp, math::CopySignOp>(
          printFamily(emitter, printMath))
      .Default([](Operation *) { return std::nullopt; });
}
