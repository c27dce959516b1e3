//===- GraphBuilder.cpp - Building a graph in C++ -------------------------===//
//
// The builder writes the graph's MLIR text op by op. To learn each result's
// type (and to reject an invalid op where it is added, with the dialect's
// own message), it parses the op alone in a probe function whose arguments
// have the operands' types, and reads the types the op inferred.
//
// Nothing a caller passes is pasted into the text as it is: the graph name
// is printed as an MLIR symbol (quoted and escaped where needed), op()'s
// name must be a registered fuse op, and its attributes are parsed and
// printed back by MLIR.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include "Fuse/FuseDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace mlir;
using namespace fusec::jit;

namespace {
struct Entry {
  std::string type;
  std::vector<int64_t> shape;
  /// "f32", "f16" or "bf16".
  std::string element;
};

bool validDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

const char *elementType(DType dtype) {
  return dtype == DType::F32 ? "f32" : dtype == DType::F16 ? "f16" : "bf16";
}

std::string tensorType(const std::vector<int64_t> &shape,
                       const std::string &element) {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  return text + element + ">";
}

std::string i64Array(const std::vector<int64_t> &values) {
  std::string text = "array<i64";
  for (auto [i, v] : llvm::enumerate(values))
    text += (i ? ", " : ": ") + std::to_string(v);
  return text + ">";
}

std::string f64(double v) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.17g", v);
  // MLIR's float literals need their '.' ("1e+17" is not one).
  if (text.find('.') == std::string::npos && llvm::isDigit(text.back()))
    text.insert(std::min(text.find('e'), text.size()), ".0");
  return text + " : f64";
}

/// "a, b" with empty parts left out.
std::string joinNonEmpty(const std::vector<std::string> &parts) {
  std::string text;
  for (const std::string &part : parts)
    if (!part.empty())
      text += (text.empty() ? "" : ", ") + part;
  return text;
}
} // namespace

/// Writes an op's text from its operands' names and types.
using OpText = std::function<std::string(const std::vector<std::string> &,
                                         const std::vector<std::string> &)>;

/// The number of results an op of `info` has when it is fixed
/// (OpTrait::NResults), else 1: the probe's placeholder results.
static unsigned fixedResults(RegisteredOperationName info) {
  if (info.hasTrait<OpTrait::NResults<6>::Impl>())
    return 6;
  if (info.hasTrait<OpTrait::NResults<5>::Impl>())
    return 5;
  if (info.hasTrait<OpTrait::NResults<4>::Impl>())
    return 4;
  if (info.hasTrait<OpTrait::NResults<3>::Impl>())
    return 3;
  if (info.hasTrait<OpTrait::NResults<2>::Impl>())
    return 2;
  return 1;
}

struct GraphBuilder::Impl {
  std::string name;
  MLIRContext context;
  std::vector<Entry> values;
  /// How the text names each value: "%arg0", "%v3", "%v5#1".
  std::vector<std::string> resultNames, lines;
  std::vector<bool> isArgument;
  size_t numArguments = 0;
  std::vector<int> outputs;
  /// The first error not yet cleared, and how many calls failed after it;
  /// `shown` says both.
  std::string error, shown;
  size_t laterErrors = 0;

  Impl(std::string name)
      : name(std::move(name)), context(MLIRContext::Threading::DISABLED) {
    context.loadDialect<func::FuncDialect, fuse::FuseDialect>();
    if (this->name.empty())
      fail("the graph name is empty: name the graph (any text will do)");
  }

  /// Records the failure of one call. The graph stays usable: later calls
  /// are built as usual, but the first error stays until it is cleared, so
  /// a caller who checks only at the end still sees it (and mlir() and
  /// compile() refuse the graph meanwhile).
  std::vector<Tensor> fail(std::string message) {
    if (error.empty())
      error = std::move(message);
    else
      ++laterErrors;
    shown = error;
    if (laterErrors)
      shown += " (and " + std::to_string(laterErrors) + " later call" +
               (laterErrors == 1 ? "" : "s") + " failed)";
    return {};
  }

  bool valid(const std::string &what, const std::vector<Tensor> &operands) {
    for (auto [i, t] : llvm::enumerate(operands)) {
      if (t.id >= 0 && t.id < static_cast<int>(values.size()))
        continue;
      fail(what + ": operand " + std::to_string(i) +
           (t.id == -1 ? " is -1, the result of a call that failed"
                       : " is not a value of this graph"));
      return false;
    }
    return true;
  }

  /// Collects the error diagnostics of the context while it lives.
  struct Diagnostics {
    std::string text;
    ScopedDiagnosticHandler handler;
    Diagnostics(MLIRContext &context)
        : handler(&context, [this](Diagnostic &diag) {
            if (diag.getSeverity() == DiagnosticSeverity::Error)
              text += (text.empty() ? "" : "; ") + diag.str();
            return success();
          }) {}
  };

  /// The probe function over `operands` holding the single op `opText`.
  OwningOpRef<ModuleOp> probe(const std::vector<Tensor> &operands,
                              const OpText &opText, bool verify) {
    std::vector<std::string> types, names;
    std::string text = "func.func @probe(";
    for (auto [i, t] : llvm::enumerate(operands)) {
      types.push_back(values[t.id].type);
      names.push_back("%p" + std::to_string(i));
      text += (i ? ", " : "") + names.back() + ": " + types.back();
    }
    text += ") {\n  " + opText(names, types) + "\n  return\n}\n";
    return parseSourceString<ModuleOp>(text, ParserConfig(&context, verify));
  }

  /// The op of a probe function, or null when the text held anything else.
  static Operation *probedOp(ModuleOp module) {
    auto func = dyn_cast<func::FuncOp>(module.getBody()->front());
    if (!func || func.getBody().front().getOperations().size() != 2)
      return nullptr;
    return &func.getBody().front().front();
  }

  /// Adds the op that `text` writes (without its results' names) and
  /// returns its results, which must be tensors.
  std::vector<Tensor> add(const std::string &what,
                          const std::vector<Tensor> &operands,
                          const OpText &text) {
    if (!valid(what, operands))
      return {};
    Diagnostics diagnostics(context);
    OwningOpRef<ModuleOp> module = probe(operands, text, /*verify=*/true);
    if (!module)
      return fail(what + ": " + diagnostics.text);
    Operation *op = probedOp(*module);
    if (!op || op->getNumResults() == 0)
      return fail(what + ": expected an op with tensor results");
    std::vector<Entry> results;
    for (Type t : op->getResultTypes()) {
      auto type = dyn_cast<RankedTensorType>(t);
      if (!type)
        return fail(what + ": expected tensor results");
      Entry entry;
      llvm::raw_string_ostream(entry.type) << type;
      llvm::raw_string_ostream(entry.element) << type.getElementType();
      entry.shape = type.getShape().vec();
      results.push_back(std::move(entry));
    }
    std::vector<std::string> names, types;
    for (const Tensor &t : operands) {
      names.push_back(resultNames[t.id]);
      types.push_back(values[t.id].type);
    }
    int first = static_cast<int>(values.size());
    std::string base = "%v" + std::to_string(first);
    std::vector<Tensor> tensors;
    for (auto [i, entry] : llvm::enumerate(results)) {
      tensors.push_back(Tensor{static_cast<int>(values.size())});
      values.push_back(std::move(entry));
      resultNames.push_back(
          results.size() == 1 ? base : base + "#" + std::to_string(i));
      isArgument.push_back(false);
    }
    std::string bind = results.size() == 1
                           ? base
                           : base + ":" + std::to_string(results.size());
    lines.push_back(bind + " = " + text(names, types));
    return tensors;
  }

  /// The one result of an op.
  Tensor one(const std::string &what, std::vector<Tensor> results) {
    if (results.empty())
      return {};
    if (results.size() != 1) {
      // Not reachable through the named methods; op() checks first.
      fail(what + ": expected one result, the op has " +
           std::to_string(results.size()));
      return {};
    }
    return results.front();
  }

  /// "fuse.NAME %a, %b {attrs} : ta, tb", listing the first `typesListed`
  /// operand types (as the op's assembly format has it).
  Tensor simple(const std::string &op, const std::vector<Tensor> &operands,
                const std::string &attributes = "", size_t typesListed = ~0u) {
    return one(op, add(op, operands, [&](const auto &names, const auto &types) {
                 std::string text =
                     "fuse." + op + " " + llvm::join(names, ", ");
                 if (!attributes.empty())
                   text += " {" + attributes + "}";
                 std::vector<std::string> listed(
                     types.begin(),
                     types.begin() + std::min(typesListed, types.size()));
                 return text + " : " + llvm::join(listed, ", ");
               }));
  }

  /// `attributes` as a dictionary, written with or without its braces.
  std::optional<DictionaryAttr> parseAttributes(const std::string &what,
                                                const std::string &attributes) {
    llvm::StringRef text = llvm::StringRef(attributes).trim();
    if (text.starts_with("{") && text.ends_with("}"))
      text = text.drop_front().drop_back();
    Diagnostics diagnostics(context);
    Attribute attr = parseAttribute(("{" + text + "}").str(), &context);
    auto dict = dyn_cast_or_null<DictionaryAttr>(attr);
    if (!dict) {
      fail(what + ": the attributes '" + attributes +
           "' are not an MLIR attribute dictionary ('axis = 1, sizes = "
           "array<i64: 2, 2>', with or without braces): " +
           diagnostics.text);
      return std::nullopt;
    }
    return dict;
  }

  /// Any fuse op whose result types follow from its operands and
  /// attributes, written in MLIR's generic form.
  std::vector<Tensor> generic(const std::string &name,
                              const std::vector<Tensor> &operands,
                              const std::string &attributes, bool single) {
    std::string what =
        llvm::StringRef(name).starts_with("fuse.") ? name.substr(5) : name;
    std::string full = "fuse." + what;
    if (!valid(what, operands))
      return {};
    std::optional<RegisteredOperationName> info =
        RegisteredOperationName::lookup(full, &context);
    if (!info)
      return fail("op: '" + name +
                  "' is not an op of the fuse dialect (docs/Dialect/"
                  "FuseDialect.md lists them)");
    if (!info->hasInterface<InferTypeOpInterface>())
      return fail(what + ": op() cannot build " + full +
                  ": its result type does not follow from its operands" +
                  (what == "cast" || what == "reshape"
                       ? "; use the builder's " + what + "()"
                       : std::string()));
    std::optional<DictionaryAttr> dict = parseAttributes(what, attributes);
    if (!dict)
      return {};
    // An unknown name is most likely a typo ("interleave"): MLIR would keep
    // it on the op, unused, and the op would silently do something else.
    llvm::ArrayRef<StringAttr> known = info->getAttributeNames();
    for (NamedAttribute attr : *dict)
      if (!llvm::is_contained(known, attr.getName())) {
        std::vector<std::string> names;
        for (StringAttr knownName : known)
          names.push_back(knownName.str());
        return fail(what + ": " + full + " has no attribute '" +
                    attr.getName().str() + "'" +
                    (names.empty()
                         ? std::string(": it takes none")
                         : "; its attributes are " + llvm::join(names, ", ")));
      }
    Diagnostics diagnostics(context);
    NamedAttrList attrList(*dict);
    // Checked here: an inherent attribute of the wrong kind would otherwise
    // be dropped without a word when it becomes a property.
    if (failed(info->verifyInherentAttrs(attrList, [&] {
          return emitError(UnknownLoc::get(&context)) << full << ": ";
        })))
      return fail(what + ": " + diagnostics.text);
    std::string attrText;
    if (!dict->empty())
      llvm::raw_string_ostream(attrText) << " " << *dict;

    auto write = [&](const std::string &resultTypes) {
      return [&, resultTypes](const auto &names, const auto &types) {
        return "\"" + full + "\"(" + llvm::join(names, ", ") + ")" + attrText +
               " : (" + llvm::join(types, ", ") + ") -> (" + resultTypes + ")";
      };
    };
    // The result types first. The op's type inference trusts what its
    // verifier checks (fuse.rope given two operands would read a third), so
    // the op is verified first with a placeholder result: when all that is
    // wrong is the result's type, inference is safe.
    std::string type =
        operands.empty() ? "tensor<f32>" : values[operands.front().id].type;
    std::vector<std::string> placeholder(fixedResults(*info), type);
    OwningOpRef<ModuleOp> module =
        probe(operands, write(llvm::join(placeholder, ", ")), /*verify=*/false);
    Operation *op = module ? probedOp(*module) : nullptr;
    if (!op)
      return fail(what + ": " + diagnostics.text);
    if (failed(verify(op)) &&
        diagnostics.text.find("inferred type(s)") == std::string::npos)
      return fail(what + ": " + diagnostics.text);
    diagnostics.text.clear();
    llvm::SmallVector<Type> inferred;
    if (failed(mlir::cast<InferTypeOpInterface>(op).inferReturnTypes(
            &context, op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), inferred)))
      return fail(what + ": " +
                  (diagnostics.text.empty() ? "cannot infer the result types"
                                            : diagnostics.text));
    if (single && inferred.size() != 1)
      return fail(what + ": " + full + " has " +
                  std::to_string(inferred.size()) +
                  " results; op() builds ops of one result (opResults, or "
                  "split, builds ops of several)");
    std::string resultTypes;
    for (auto [i, t] : llvm::enumerate(inferred))
      llvm::raw_string_ostream(resultTypes) << (i ? ", " : "") << t;
    return add(what, operands, write(resultTypes));
  }

  std::string symbolName() {
    std::string text;
    llvm::raw_string_ostream(text) << FlatSymbolRefAttr::get(&context, name);
    return text;
  }
};

GraphBuilder::GraphBuilder(std::string name)
    : impl(std::make_unique<Impl>(std::move(name))) {}
GraphBuilder::~GraphBuilder() = default;
GraphBuilder::GraphBuilder(GraphBuilder &&) noexcept = default;
GraphBuilder &GraphBuilder::operator=(GraphBuilder &&) noexcept = default;

Tensor GraphBuilder::input(const std::vector<int64_t> &shape, DType dtype) {
  if (!validDType(dtype)) {
    impl->fail("input: dtype " + std::to_string(static_cast<int>(dtype)) +
               " is not a dtype: use f32 (0), f16 (1) or bf16 (2)");
    return {};
  }
  for (int64_t d : shape)
    if (d < 0) {
      impl->fail("input: negative extent " + std::to_string(d));
      return {};
    }
  int id = static_cast<int>(impl->values.size());
  impl->values.push_back(
      {tensorType(shape, elementType(dtype)), shape, elementType(dtype)});
  impl->resultNames.push_back("%arg" + std::to_string(impl->numArguments++));
  impl->isArgument.push_back(true);
  return Tensor{id};
}

Tensor GraphBuilder::conv2d(Tensor x, Tensor filter,
                            const Conv2dOptions &options,
                            std::optional<Tensor> bias) {
  std::vector<Tensor> operands = {x, filter};
  if (bias)
    operands.push_back(*bias);
  return impl->simple("conv2d", operands,
                      "strides = " + i64Array(options.strides) +
                          ", padding = " + i64Array(options.padding) +
                          ", dilation = " + i64Array(options.dilation) +
                          ", groups = " + std::to_string(options.groups));
}

Tensor GraphBuilder::batchNorm(Tensor x, Tensor mean, Tensor variance,
                               Tensor scale, Tensor shift, double epsilon) {
  return impl->simple("batch_norm", {x, mean, variance, scale, shift},
                      "epsilon = " + f64(epsilon), 2);
}

Tensor GraphBuilder::relu(Tensor x) { return impl->simple("relu", {x}); }
Tensor GraphBuilder::relu6(Tensor x) { return impl->simple("relu6", {x}); }
Tensor GraphBuilder::gelu(Tensor x) { return impl->simple("gelu", {x}); }
Tensor GraphBuilder::silu(Tensor x) { return impl->simple("silu", {x}); }
Tensor GraphBuilder::sigmoid(Tensor x) { return impl->simple("sigmoid", {x}); }
Tensor GraphBuilder::tanh(Tensor x) { return impl->simple("tanh", {x}); }
Tensor GraphBuilder::hardswish(Tensor x) {
  return impl->simple("hardswish", {x});
}
Tensor GraphBuilder::add(Tensor a, Tensor b) {
  return impl->simple("add", {a, b});
}
Tensor GraphBuilder::sub(Tensor a, Tensor b) {
  return impl->simple("sub", {a, b});
}
Tensor GraphBuilder::mul(Tensor a, Tensor b) {
  return impl->simple("mul", {a, b});
}
Tensor GraphBuilder::div(Tensor a, Tensor b) {
  return impl->simple("div", {a, b});
}
Tensor GraphBuilder::biasAdd(Tensor x, Tensor bias) {
  return impl->simple("bias_add", {x, bias});
}
Tensor GraphBuilder::linear(Tensor x, Tensor weight,
                            std::optional<Tensor> bias) {
  std::vector<Tensor> operands = {x, weight};
  if (bias)
    operands.push_back(*bias);
  return impl->simple("linear", operands);
}
Tensor GraphBuilder::matmul(Tensor a, Tensor b) {
  return impl->simple("matmul", {a, b});
}

Tensor GraphBuilder::layerNorm(Tensor x, std::optional<Tensor> scale,
                               std::optional<Tensor> shift, double epsilon) {
  std::vector<Tensor> operands = {x};
  if (scale)
    operands.push_back(*scale);
  if (shift)
    operands.push_back(*shift);
  bool hasScale = scale.has_value(), hasShift = shift.has_value();
  return impl->one(
      "layer_norm",
      impl->add(
          "layer_norm", operands, [&](const auto &names, const auto &types) {
            std::string text = "fuse.layer_norm " + names[0];
            size_t next = 1;
            if (hasScale)
              text += " scale(" + names[next] + " : " + types[next] + ")",
                  ++next;
            if (hasShift)
              text += " shift(" + names[next] + " : " + types[next] + ")";
            return text + " {epsilon = " + f64(epsilon) + "} : " + types[0];
          }));
}

Tensor GraphBuilder::rmsNorm(Tensor x, std::optional<Tensor> scale,
                             double epsilon) {
  std::vector<Tensor> operands = {x};
  if (scale)
    operands.push_back(*scale);
  return impl->one(
      "rms_norm",
      impl->add(
          "rms_norm", operands, [&](const auto &names, const auto &types) {
            std::string text = "fuse.rms_norm " + names[0];
            if (names.size() > 1)
              text += " scale(" + names[1] + " : " + types[1] + ")";
            return text + " {epsilon = " + f64(epsilon) + "} : " + types[0];
          }));
}

Tensor GraphBuilder::softmax(Tensor x) { return impl->simple("softmax", {x}); }

Tensor GraphBuilder::attention(Tensor q, Tensor k, Tensor v,
                               const AttentionOptions &options) {
  std::string attributes;
  if (options.causal)
    attributes = "causal";
  if (options.scale)
    attributes += (attributes.empty() ? "" : ", ") + std::string("scale = ") +
                  f64(*options.scale);
  return impl->simple("attention", {q, k, v}, attributes);
}

Tensor GraphBuilder::rope(Tensor x, Tensor cos, Tensor sin, bool interleaved) {
  return impl->simple("rope", {x, cos, sin}, interleaved ? "interleaved" : "",
                      2);
}

Tensor GraphBuilder::maxPool2d(Tensor x, std::vector<int64_t> kernel,
                               std::vector<int64_t> strides,
                               std::vector<int64_t> padding) {
  // No strides: the op's default, the kernel.
  return impl->simple(
      "max_pool2d", {x},
      joinNonEmpty({"kernel = " + i64Array(kernel),
                    strides.empty() ? "" : "strides = " + i64Array(strides),
                    "padding = " + i64Array(padding)}));
}

Tensor GraphBuilder::avgPool2d(Tensor x, std::vector<int64_t> kernel,
                               std::vector<int64_t> strides,
                               std::vector<int64_t> padding,
                               bool countIncludePad) {
  return impl->simple(
      "avg_pool2d", {x},
      joinNonEmpty({"kernel = " + i64Array(kernel),
                    strides.empty() ? "" : "strides = " + i64Array(strides),
                    "padding = " + i64Array(padding),
                    countIncludePad ? "" : "count_include_pad = false"}));
}

Tensor GraphBuilder::globalAvgPool(Tensor x) {
  return impl->simple("global_avg_pool", {x});
}

Tensor GraphBuilder::transpose(Tensor x,
                               const std::vector<int64_t> &permutation) {
  return impl->simple("transpose", {x},
                      "permutation = " + i64Array(permutation));
}

// fuse.reshape and fuse.cast state their result type: `x`'s shape or
// element type replaced.
Tensor GraphBuilder::reshape(Tensor x, const std::vector<int64_t> &shape) {
  if (!impl->valid("reshape", {x}))
    return {};
  for (int64_t d : shape)
    if (d < 0) {
      impl->fail("reshape: negative extent " + std::to_string(d));
      return {};
    }
  std::string target = tensorType(shape, impl->values[x.id].element);
  return impl->one(
      "reshape",
      impl->add("reshape", {x}, [&](const auto &names, const auto &types) {
        return "fuse.reshape " + names[0] + " : " + types[0] + " to " + target;
      }));
}

Tensor GraphBuilder::cast(Tensor x, DType dtype) {
  if (!impl->valid("cast", {x}))
    return {};
  if (!validDType(dtype)) {
    impl->fail("cast: dtype " + std::to_string(static_cast<int>(dtype)) +
               " is not a dtype: use f32 (0), f16 (1) or bf16 (2)");
    return {};
  }
  std::string target = tensorType(impl->values[x.id].shape, elementType(dtype));
  return impl->one(
      "cast", impl->add("cast", {x}, [&](const auto &names, const auto &types) {
        return "fuse.cast " + names[0] + " : " + types[0] + " to " + target;
      }));
}

Tensor GraphBuilder::slice(Tensor x, const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &sizes) {
  return impl->simple("slice", {x},
                      "offsets = " + i64Array(offsets) +
                          ", sizes = " + i64Array(sizes));
}

Tensor GraphBuilder::concat(const std::vector<Tensor> &values, int64_t axis) {
  return impl->simple("concat", values, "axis = " + std::to_string(axis));
}

std::vector<Tensor> GraphBuilder::split(Tensor x, int64_t axis,
                                        const std::vector<int64_t> &sizes) {
  std::string attributes =
      "axis = " + std::to_string(axis) + ", sizes = " + i64Array(sizes);
  return impl->add("split", {x}, [&](const auto &names, const auto &types) {
    return "fuse.split " + names[0] + " {" + attributes + "} : " + types[0];
  });
}

Tensor GraphBuilder::op(const std::string &name,
                        const std::vector<Tensor> &operands,
                        const std::string &attributes) {
  return impl->one(name, impl->generic(name, operands, attributes, true));
}

std::vector<Tensor> GraphBuilder::opResults(const std::string &name,
                                            const std::vector<Tensor> &operands,
                                            const std::string &attributes) {
  return impl->generic(name, operands, attributes, false);
}

void GraphBuilder::output(Tensor x) {
  if (impl->valid("output", {x}))
    impl->outputs.push_back(x.id);
}

std::vector<int64_t> GraphBuilder::shape(Tensor x) const {
  if (x.id < 0 || x.id >= static_cast<int>(impl->values.size()))
    return {};
  return impl->values[x.id].shape;
}

const std::string &GraphBuilder::error() const { return impl->shown; }

void GraphBuilder::clearError() {
  impl->error.clear();
  impl->shown.clear();
  impl->laterErrors = 0;
}

void GraphBuilder::recordError(const std::string &message) {
  impl->fail(message);
}

std::string GraphBuilder::mlir() const {
  if (!impl->error.empty() || impl->outputs.empty())
    return "";
  std::string text = "func.func " + impl->symbolName() + "(";
  size_t arg = 0;
  for (auto [i, v] : llvm::enumerate(impl->values))
    if (impl->isArgument[i])
      text += (arg++ ? ", " : "") + impl->resultNames[i] + ": " + v.type;
  std::vector<std::string> names, types;
  for (int id : impl->outputs) {
    names.push_back(impl->resultNames[id]);
    types.push_back(impl->values[id].type);
  }
  text += ") -> (" + llvm::join(types, ", ") + ") {\n";
  for (const std::string &line : impl->lines)
    text += "  " + line + "\n";
  return text + "  return " + llvm::join(names, ", ") + " : " +
         llvm::join(types, ", ") + "\n}\n";
}

Result fusec::jit::compile(const GraphBuilder &graph, const Options &options) {
  if (!graph.error().empty()) {
    Result result;
    result.error = "graph builder: " + graph.error();
    return result;
  }
  std::string text = graph.mlir();
  if (text.empty()) {
    Result result;
    result.error = "graph builder: the graph has no output";
    return result;
  }
  return compile(text, options, "<built graph>");
}
