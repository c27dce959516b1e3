//===- GraphBuilder.cpp - Building a graph in C++ -------------------------===//
//
// The builder writes the graph's MLIR text op by op. To learn each result's
// type (and to reject an invalid op where it is added, with the dialect's
// own message), it parses the op alone in a probe function whose arguments
// have the operands' types, and reads the type the op inferred.
//
//===----------------------------------------------------------------------===//

#include "fusec/JIT.h"

#include "Fuse/FuseDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
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
};

std::string tensorType(const std::vector<int64_t> &shape, DType dtype) {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  return text + (dtype == DType::F32 ? "f32" : dtype == DType::F16 ? "f16"
                                                                    : "bf16") +
         ">";
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
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text + " : f64";
}
} // namespace

/// Writes an op's text from its operands' names and types.
using OpText = std::function<std::string(const std::vector<std::string> &,
                                         const std::vector<std::string> &)>;

struct GraphBuilder::Impl {
  std::string name;
  MLIRContext context;
  std::vector<Entry> values;
  std::vector<std::string> argNames, resultNames, lines;
  std::vector<int> outputs;
  std::string error;

  Impl(std::string name)
      : name(std::move(name)), context(MLIRContext::Threading::DISABLED) {
    context.loadDialect<func::FuncDialect, fuse::FuseDialect>();
  }

  std::string nameOf(int id) { return resultNames[id]; }

  bool valid(const std::string &what, const std::vector<Tensor> &operands) {
    if (!error.empty())
      return false;
    for (auto [i, t] : llvm::enumerate(operands))
      if (t.id < 0 || t.id >= static_cast<int>(values.size())) {
        error = what + ": operand " + std::to_string(i) +
                " is not a value of this graph";
        return false;
      }
    return true;
  }

  Tensor add(const std::string &what, const std::vector<Tensor> &operands,
             const OpText &text) {
    if (!valid(what, operands))
      return {};
    std::vector<std::string> types, probeNames, names;
    std::string probe = "func.func @probe(";
    for (auto [i, t] : llvm::enumerate(operands)) {
      types.push_back(values[t.id].type);
      probeNames.push_back("%p" + std::to_string(i));
      names.push_back(nameOf(t.id));
      probe += (i ? ", " : "") + probeNames.back() + ": " + types.back();
    }
    probe += ") {\n  %r = " + text(probeNames, types) + "\n  return\n}\n";

    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        diagnostics += (diagnostics.empty() ? "" : "; ") + diag.str();
      return success();
    });
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(probe, ParserConfig(&context));
    if (!module) {
      error = what + ": " + diagnostics;
      return {};
    }
    auto func = cast<func::FuncOp>(module->getBody()->front());
    Operation &op = func.getBody().front().front();
    auto type = dyn_cast<RankedTensorType>(op.getResult(0).getType());
    if (op.getNumResults() != 1 || !type) {
      error = what + ": expected one tensor result";
      return {};
    }
    std::string typeText;
    llvm::raw_string_ostream(typeText) << type;
    int id = static_cast<int>(values.size());
    values.push_back({typeText, type.getShape().vec()});
    resultNames.push_back("%v" + std::to_string(id));
    lines.push_back(resultNames.back() + " = " + text(names, types));
    return Tensor{id};
  }

  /// "fuse.NAME %a, %b {attrs} : ta, tb".
  Tensor simple(const std::string &op, const std::vector<Tensor> &operands,
                const std::string &attributes = "", size_t typesListed = ~0u) {
    return add(op, operands, [&](const auto &names, const auto &types) {
      std::string text = "fuse." + op + " " + llvm::join(names, ", ");
      if (!attributes.empty())
        text += " {" + attributes + "}";
      std::vector<std::string> listed(
          types.begin(), types.begin() + std::min(typesListed, types.size()));
      return text + " : " + llvm::join(listed, ", ");
    });
  }
};

GraphBuilder::GraphBuilder(std::string name)
    : impl(std::make_unique<Impl>(std::move(name))) {}
GraphBuilder::~GraphBuilder() = default;
GraphBuilder::GraphBuilder(GraphBuilder &&) noexcept = default;
GraphBuilder &GraphBuilder::operator=(GraphBuilder &&) noexcept = default;

Tensor GraphBuilder::input(const std::vector<int64_t> &shape, DType dtype) {
  if (!impl->error.empty())
    return {};
  for (int64_t d : shape)
    if (d < 0) {
      impl->error = "input: negative extent " + std::to_string(d);
      return {};
    }
  int id = static_cast<int>(impl->values.size());
  impl->values.push_back({tensorType(shape, dtype), shape});
  impl->resultNames.push_back("%arg" + std::to_string(impl->argNames.size()));
  impl->argNames.push_back(impl->resultNames.back());
  return Tensor{id};
}

Tensor GraphBuilder::conv2d(Tensor x, Tensor filter,
                            const Conv2dOptions &options,
                            std::optional<Tensor> bias) {
  std::vector<Tensor> operands = {x, filter};
  if (bias)
    operands.push_back(*bias);
  return impl->simple(
      "conv2d", operands,
      "strides = " + i64Array(options.strides) + ", padding = " +
          i64Array(options.padding) + ", dilation = " +
          i64Array(options.dilation) +
          ", groups = " + std::to_string(options.groups));
}

Tensor GraphBuilder::batchNorm(Tensor x, Tensor mean, Tensor variance,
                               Tensor scale, Tensor shift, double epsilon) {
  return impl->simple("batch_norm", {x, mean, variance, scale, shift},
                      "epsilon = " + f64(epsilon), 2);
}

Tensor GraphBuilder::relu(Tensor x) { return impl->simple("relu", {x}); }
Tensor GraphBuilder::gelu(Tensor x) { return impl->simple("gelu", {x}); }
Tensor GraphBuilder::silu(Tensor x) { return impl->simple("silu", {x}); }
Tensor GraphBuilder::sigmoid(Tensor x) { return impl->simple("sigmoid", {x}); }
Tensor GraphBuilder::tanh(Tensor x) { return impl->simple("tanh", {x}); }
Tensor GraphBuilder::add(Tensor a, Tensor b) {
  return impl->simple("add", {a, b});
}
Tensor GraphBuilder::mul(Tensor a, Tensor b) {
  return impl->simple("mul", {a, b});
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
  return impl->add("layer_norm", operands,
                   [&](const auto &names, const auto &types) {
                     std::string text = "fuse.layer_norm " + names[0];
                     size_t next = 1;
                     if (hasScale)
                       text += " scale(" + names[next] + " : " +
                               types[next] + ")",
                           ++next;
                     if (hasShift)
                       text += " shift(" + names[next] + " : " +
                               types[next] + ")";
                     return text + " {epsilon = " + f64(epsilon) +
                            "} : " + types[0];
                   });
}

Tensor GraphBuilder::rmsNorm(Tensor x, std::optional<Tensor> scale,
                             double epsilon) {
  std::vector<Tensor> operands = {x};
  if (scale)
    operands.push_back(*scale);
  return impl->add("rms_norm", operands,
                   [&](const auto &names, const auto &types) {
                     std::string text = "fuse.rms_norm " + names[0];
                     if (names.size() > 1)
                       text += " scale(" + names[1] + " : " + types[1] + ")";
                     return text + " {epsilon = " + f64(epsilon) +
                            "} : " + types[0];
                   });
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

Tensor GraphBuilder::maxPool2d(Tensor x, std::vector<int64_t> kernel,
                               std::vector<int64_t> strides,
                               std::vector<int64_t> padding) {
  return impl->simple("max_pool2d", {x},
                      "kernel = " + i64Array(kernel) + ", strides = " +
                          i64Array(strides) + ", padding = " +
                          i64Array(padding));
}

Tensor GraphBuilder::transpose(Tensor x,
                               const std::vector<int64_t> &permutation) {
  return impl->simple("transpose", {x},
                      "permutation = " + i64Array(permutation));
}

Tensor GraphBuilder::reshape(Tensor x, const std::vector<int64_t> &shape) {
  if (!impl->valid("reshape", {x}))
    return {};
  std::string type = impl->values[x.id].type;
  std::string element = type.substr(type.rfind('x') + 1);
  std::string target = "tensor<";
  for (int64_t d : shape)
    target += std::to_string(d) + "x";
  target += element;
  return impl->add("reshape", {x}, [&](const auto &names, const auto &types) {
    return "fuse.reshape " + names[0] + " : " + types[0] + " to " + target;
  });
}

Tensor GraphBuilder::op(const std::string &name,
                        const std::vector<Tensor> &operands,
                        const std::string &attributes) {
  std::string op = llvm::StringRef(name).starts_with("fuse.")
                       ? name.substr(5)
                       : name;
  return impl->simple(op, operands, attributes);
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

const std::string &GraphBuilder::error() const { return impl->error; }

std::string GraphBuilder::mlir() const {
  if (!impl->error.empty() || impl->outputs.empty())
    return "";
  std::string text = "func.func @" + impl->name + "(";
  size_t arg = 0;
  for (auto [i, v] : llvm::enumerate(impl->values))
    if (llvm::StringRef(impl->resultNames[i]).starts_with("%arg"))
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
