//===- CApi.cpp - The JIT library's C API ---------------------------------===//

#include "fusec/fusec_jit.h"
#include "fusec/JIT.h"
#include "fusec/Target/TargetDescription.h"

#include "Evaluate.h"

#include "llvm/ADT/STLExtras.h"

#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

using namespace fusec;

struct fusec_jit_result {
  jit::Result result;
};

static_assert(static_cast<int>(jit::Source::DiskCache) == FUSEC_JIT_DISK_CACHE,
              "fusec_jit_source must mirror jit::Source");

static jit::Options toOptions(const fusec_jit_options *c) {
  jit::Options options;
  if (!c)
    return options;
  auto set = [](std::string &field, const char *value) {
    if (value)
      field = value;
  };
  set(options.arch, c->arch);
  set(options.fp32Math, c->fp32_math);
  set(options.tuningDb, c->tuning_db);
  set(options.entry, c->entry);
  set(options.cacheDir, c->cache_dir);
  options.cache = c->cache != 0;
  set(options.backend, c->backend);
  options.smCount = c->sm_count;
  set(options.gpu, c->gpu);
  for (size_t i = 0; i < c->num_tiles; ++i)
    options.tiles.emplace_back(c->tile_kernels[i] ? c->tile_kernels[i] : "",
                               c->tiles[i] ? c->tiles[i] : "");
  options.train = c->train != 0;
  if (c->wrt)
    options.wrt.assign(c->wrt, c->wrt + c->num_wrt);
  options.deterministic = c->deterministic != 0;
  return options;
}

struct fusec_jit_tuning {
  jit::TuneResult result;
};

static_assert(static_cast<int>(jit::TuneStatus::Failed) ==
                      FUSEC_JIT_TUNE_FAILED &&
                  static_cast<int>(jit::TuneStatus::NoDevice) ==
                      FUSEC_JIT_TUNE_NO_DEVICE,
              "fusec_jit_tune_status must mirror jit::TuneStatus");
static_assert(static_cast<int>(jit::TuneMessage::Kind::Error) ==
                  FUSEC_JIT_ERROR,
              "fusec_jit_message_kind must mirror jit::TuneMessage::Kind");

static jit::TuneOptions toTuneOptions(const fusec_jit_tune_options *c) {
  jit::TuneOptions options;
  if (!c)
    return options;
  for (auto [field, value] : {std::pair{&options.arch, c->arch},
                              std::pair{&options.fp32Math, c->fp32_math},
                              std::pair{&options.tuningDb, c->tuning_db},
                              std::pair{&options.entry, c->entry}})
    if (value)
      *field = value;
  options.device = c->device;
  options.seed = c->seed;
  options.repeat = c->repeat;
  options.referenceGflop = c->reference_gflop;
  return options;
}

struct fusec_jit_evaluation {
  jit::Evaluation evaluation;
};

struct fusec_jit_training_evaluation {
  jit::TrainingEvaluation evaluation;
};

struct fusec_jit_graph {
  jit::GraphBuilder builder;
  std::string text;
};

static_assert(static_cast<int>(jit::DType::BF16) == FUSEC_JIT_BF16,
              "fusec_jit_dtype must mirror jit::DType");

static std::vector<int64_t> toVector(const long long *values, size_t count) {
  return values ? std::vector<int64_t>(values, values + count)
                : std::vector<int64_t>();
}

/// `count` values at `values`, or false with the builder's error set for a
/// NULL array that should hold some.
static bool array(fusec_jit_graph *g, const char *op, const char *argument,
                  const long long *values, size_t count,
                  std::vector<int64_t> &out) {
  if (!values && count) {
    g->builder.recordError(std::string(op) + ": " + argument +
                           " is NULL but its count is " +
                           std::to_string(count));
    return false;
  }
  out = toVector(values, count);
  return true;
}

static bool tensorArray(fusec_jit_graph *g, const char *op, const int *values,
                        size_t count, std::vector<jit::Tensor> &out) {
  if (!values && count) {
    g->builder.recordError(std::string(op) +
                           ": the operands are NULL but "
                           "their count is " +
                           std::to_string(count));
    return false;
  }
  for (size_t i = 0; i < count; ++i)
    out.push_back({values[i]});
  return true;
}

static std::optional<jit::Tensor> optional(int id) {
  if (id < 0)
    return std::nullopt;
  return jit::Tensor{id};
}

extern "C" {

void fusec_jit_options_init(fusec_jit_options *options) {
  *options = fusec_jit_options{};
  options->cache = 1;
}

fusec_jit_result *fusec_jit_compile(const char *mlir, const char *name,
                                    const fusec_jit_options *options) {
  auto *r = new (std::nothrow) fusec_jit_result;
  if (!r)
    return nullptr;
  if (!mlir)
    r->result.error = "fusec_jit_compile: the graph text is null";
  else
    r->result = jit::compile(mlir, toOptions(options), name ? name : "<graph>");
  return r;
}

fusec_jit_result *fusec_jit_compile_file(const char *path,
                                         const fusec_jit_options *options) {
  auto *r = new (std::nothrow) fusec_jit_result;
  if (!r)
    return nullptr;
  if (!path)
    r->result.error = "fusec_jit_compile_file: the path is null";
  else
    r->result = jit::compileFile(path, toOptions(options));
  return r;
}

void fusec_jit_result_free(fusec_jit_result *result) { delete result; }

int fusec_jit_ok(const fusec_jit_result *result) {
  return result && result->result.ok();
}

const char *fusec_jit_error(const fusec_jit_result *result) {
  return result ? result->result.error.c_str() : "null result";
}

const char *fusec_jit_artifact(const fusec_jit_result *result, size_t *size) {
  if (size)
    *size = result ? result->result.artifact.size() : 0;
  return result ? result->result.artifact.c_str() : "";
}

const char *fusec_jit_warnings(const fusec_jit_result *result) {
  return result ? result->result.warnings.c_str() : "";
}

fusec_jit_source fusec_jit_result_source(const fusec_jit_result *result) {
  return result ? static_cast<fusec_jit_source>(result->result.source)
                : FUSEC_JIT_COMPILED;
}

double fusec_jit_milliseconds(const fusec_jit_result *result) {
  return result ? result->result.milliseconds : 0;
}

fusec_jit_evaluation *fusec_jit_evaluate(const char *mlir, const char *name,
                                         const char *entry,
                                         const fusec_jit_host_tensor *inputs,
                                         size_t num_inputs) {
  auto *e = new (std::nothrow) fusec_jit_evaluation;
  if (!e)
    return nullptr;
  if (!mlir || (num_inputs && !inputs)) {
    e->evaluation.error = "fusec_jit_evaluate: the graph text or the inputs "
                          "are null";
    return e;
  }
  // The caller's arrays are viewed, not copied: their number and shapes
  // are compared with the graph's before anything is allocated.
  static_assert(sizeof(long long) == sizeof(int64_t));
  try {
    e->evaluation = jit::detail::evaluate(
        mlir, num_inputs,
        [&](size_t i) {
          return jit::detail::InputView{
              reinterpret_cast<const int64_t *>(inputs[i].shape),
              inputs[i].rank, inputs[i].data, std::nullopt};
        },
        entry ? entry : "", name ? name : "<graph>");
  } catch (const std::bad_alloc &) {
    // Nothing may throw through a C interface.
    e->evaluation = jit::Evaluation();
    e->evaluation.error = "fusec_jit_evaluate: out of host memory";
  }
  return e;
}

void fusec_jit_evaluation_free(fusec_jit_evaluation *evaluation) {
  delete evaluation;
}

const char *fusec_jit_evaluation_error(const fusec_jit_evaluation *e) {
  return e ? e->evaluation.error.c_str() : "null evaluation";
}

size_t fusec_jit_evaluation_num_outputs(const fusec_jit_evaluation *e) {
  return e ? e->evaluation.outputs.size() : 0;
}

const double *fusec_jit_evaluation_output(const fusec_jit_evaluation *e,
                                          size_t index,
                                          const long long **shape,
                                          size_t *rank,
                                          fusec_jit_dtype *dtype) {
  if (!e || index >= e->evaluation.outputs.size())
    return nullptr;
  const jit::HostTensor &t = e->evaluation.outputs[index];
  static_assert(sizeof(long long) == sizeof(int64_t));
  if (shape)
    *shape = reinterpret_cast<const long long *>(t.shape.data());
  if (rank)
    *rank = t.shape.size();
  if (dtype)
    *dtype = static_cast<fusec_jit_dtype>(t.dtype);
  return t.data.data();
}

fusec_jit_training_evaluation *fusec_jit_evaluate_training(
    const char *mlir, const char *name, const char *entry,
    const fusec_jit_host_tensor *inputs, size_t num_inputs,
    const fusec_jit_host_tensor *result_grads, size_t num_result_grads,
    const unsigned *wrt, size_t num_wrt) {
  auto *e = new (std::nothrow) fusec_jit_training_evaluation;
  if (!e)
    return nullptr;
  if (!mlir || (num_inputs && !inputs) || (num_result_grads && !result_grads) ||
      (num_wrt && !wrt)) {
    e->evaluation.error = "fusec_jit_evaluate_training: the graph text, the "
                          "inputs, the result gradients or wrt are null";
    return e;
  }
  try {
    auto copy = [](const fusec_jit_host_tensor *tensors, size_t count) {
      std::vector<jit::HostTensor> out(count);
      for (size_t i = 0; i < count; ++i) {
        out[i].shape = toVector(tensors[i].shape, tensors[i].rank);
        int64_t n = 1;
        for (int64_t d : out[i].shape)
          n = d < 0 ? 0 : n * d;
        if (tensors[i].data)
          out[i].data.assign(tensors[i].data, tensors[i].data + n);
      }
      return out;
    };
    e->evaluation = jit::evaluateTraining(
        mlir, copy(inputs, num_inputs), copy(result_grads, num_result_grads),
        std::vector<unsigned>(wrt, wrt + num_wrt), entry ? entry : "",
        name ? name : "<graph>");
  } catch (const std::bad_alloc &) {
    e->evaluation = jit::TrainingEvaluation();
    e->evaluation.error = "fusec_jit_evaluate_training: out of host memory";
  }
  return e;
}

void fusec_jit_training_evaluation_free(fusec_jit_training_evaluation *e) {
  delete e;
}

const char *
fusec_jit_training_evaluation_error(const fusec_jit_training_evaluation *e) {
  return e ? e->evaluation.error.c_str() : "null evaluation";
}

static const std::vector<jit::HostTensor> *
trainingPart(const fusec_jit_training_evaluation *e,
             fusec_jit_training_part part) {
  if (!e)
    return nullptr;
  switch (part) {
  case FUSEC_JIT_TRAINING_RESULTS:
    return &e->evaluation.outputs;
  case FUSEC_JIT_TRAINING_SAVED:
    return &e->evaluation.saved;
  case FUSEC_JIT_TRAINING_GRADIENTS:
    return &e->evaluation.gradients;
  }
  return nullptr;
}

size_t
fusec_jit_training_evaluation_count(const fusec_jit_training_evaluation *e,
                                    fusec_jit_training_part part) {
  const std::vector<jit::HostTensor> *tensors = trainingPart(e, part);
  return tensors ? tensors->size() : 0;
}

const double *
fusec_jit_training_evaluation_tensor(const fusec_jit_training_evaluation *e,
                                     fusec_jit_training_part part, size_t index,
                                     const long long **shape, size_t *rank,
                                     fusec_jit_dtype *dtype) {
  const std::vector<jit::HostTensor> *tensors = trainingPart(e, part);
  if (!tensors || index >= tensors->size())
    return nullptr;
  const jit::HostTensor &t = (*tensors)[index];
  if (shape)
    *shape = reinterpret_cast<const long long *>(t.shape.data());
  if (rank)
    *rank = t.shape.size();
  if (dtype)
    *dtype = static_cast<fusec_jit_dtype>(t.dtype);
  return t.data.data();
}

long long
fusec_jit_training_evaluation_wrt(const fusec_jit_training_evaluation *e,
                                  size_t index) {
  if (!e || index >= e->evaluation.wrt.size())
    return -1;
  return e->evaluation.wrt[index];
}

double fusec_jit_tolerance(fusec_jit_dtype dtype, const char *fp32_math) {
  return jit::tolerance(static_cast<jit::DType>(dtype),
                        fp32_math ? fp32_math : "ieee");
}

fusec_jit_graph *fusec_jit_graph_new(const char *name) {
  return new (std::nothrow) fusec_jit_graph{
      jit::GraphBuilder(name ? name : "graph"), ""};
}

void fusec_jit_graph_free(fusec_jit_graph *graph) { delete graph; }

int fusec_jit_graph_input(fusec_jit_graph *g, const long long *shape,
                          size_t rank, fusec_jit_dtype dtype) {
  std::vector<int64_t> extents;
  if (!g || !array(g, "input", "shape", shape, rank, extents))
    return -1;
  return g->builder.input(extents, static_cast<jit::DType>(dtype)).id;
}

int fusec_jit_graph_conv2d(fusec_jit_graph *g, int x, int filter,
                           const long long *strides, const long long *padding,
                           size_t num_padding, const long long *dilation,
                           long long groups, int bias) {
  if (!g)
    return -1;
  jit::Conv2dOptions options;
  if (strides)
    options.strides = toVector(strides, 2);
  if (padding)
    options.padding = toVector(padding, num_padding);
  if (dilation)
    options.dilation = toVector(dilation, 2);
  options.groups = groups;
  return g->builder.conv2d({x}, {filter}, options, optional(bias)).id;
}

int fusec_jit_graph_batch_norm(fusec_jit_graph *g, int x, int mean,
                               int variance, int scale, int shift,
                               double epsilon) {
  if (!g)
    return -1;
  return g->builder
      .batchNorm({x}, {mean}, {variance}, {scale}, {shift}, epsilon)
      .id;
}

int fusec_jit_graph_unary(fusec_jit_graph *g, const char *op, int x) {
  if (!g)
    return -1;
  std::string name = op ? op : "";
  jit::GraphBuilder &b = g->builder;
  if (name == "relu")
    return b.relu({x}).id;
  if (name == "relu6")
    return b.relu6({x}).id;
  if (name == "gelu")
    return b.gelu({x}).id;
  if (name == "silu")
    return b.silu({x}).id;
  if (name == "sigmoid")
    return b.sigmoid({x}).id;
  if (name == "tanh")
    return b.tanh({x}).id;
  if (name == "hardswish")
    return b.hardswish({x}).id;
  if (name == "softmax")
    return b.softmax({x}).id;
  // Any other op of one operand, or the builder's error naming it.
  return b.op(name, {{x}}).id;
}

int fusec_jit_graph_binary(fusec_jit_graph *g, const char *op, int a, int b) {
  if (!g)
    return -1;
  std::string name = op ? op : "";
  jit::GraphBuilder &builder = g->builder;
  if (name == "add")
    return builder.add({a}, {b}).id;
  if (name == "sub")
    return builder.sub({a}, {b}).id;
  if (name == "mul")
    return builder.mul({a}, {b}).id;
  if (name == "div")
    return builder.div({a}, {b}).id;
  if (name == "bias_add")
    return builder.biasAdd({a}, {b}).id;
  if (name == "matmul")
    return builder.matmul({a}, {b}).id;
  return builder.op(name, {{a}, {b}}).id;
}

int fusec_jit_graph_linear(fusec_jit_graph *g, int x, int weight, int bias) {
  if (!g)
    return -1;
  return g->builder.linear({x}, {weight}, optional(bias)).id;
}

int fusec_jit_graph_layer_norm(fusec_jit_graph *g, int x, int scale, int shift,
                               double epsilon) {
  if (!g)
    return -1;
  return g->builder.layerNorm({x}, optional(scale), optional(shift), epsilon)
      .id;
}

int fusec_jit_graph_rms_norm(fusec_jit_graph *g, int x, int scale,
                             double epsilon) {
  if (!g)
    return -1;
  return g->builder.rmsNorm({x}, optional(scale), epsilon).id;
}

int fusec_jit_graph_attention(fusec_jit_graph *g, int q, int k, int v,
                              int causal, int has_scale, double scale) {
  if (!g)
    return -1;
  jit::AttentionOptions options;
  options.causal = causal != 0;
  if (has_scale)
    options.scale = scale;
  return g->builder.attention({q}, {k}, {v}, options).id;
}

int fusec_jit_graph_rope(fusec_jit_graph *g, int x, int cos_table,
                         int sin_table, int interleaved) {
  if (!g)
    return -1;
  return g->builder.rope({x}, {cos_table}, {sin_table}, interleaved != 0).id;
}

int fusec_jit_graph_max_pool2d(fusec_jit_graph *g, int x,
                               const long long *kernel, size_t num_kernel,
                               const long long *strides, size_t num_strides,
                               const long long *padding, size_t num_padding) {
  std::vector<int64_t> k, s, p;
  if (!g || !array(g, "max_pool2d", "kernel", kernel, num_kernel, k) ||
      !array(g, "max_pool2d", "strides", strides, num_strides, s) ||
      !array(g, "max_pool2d", "padding", padding, num_padding, p))
    return -1;
  return g->builder.maxPool2d({x}, k, s, p).id;
}

int fusec_jit_graph_avg_pool2d(fusec_jit_graph *g, int x,
                               const long long *kernel, size_t num_kernel,
                               const long long *strides, size_t num_strides,
                               const long long *padding, size_t num_padding,
                               int count_include_pad) {
  std::vector<int64_t> k, s, p;
  if (!g || !array(g, "avg_pool2d", "kernel", kernel, num_kernel, k) ||
      !array(g, "avg_pool2d", "strides", strides, num_strides, s) ||
      !array(g, "avg_pool2d", "padding", padding, num_padding, p))
    return -1;
  return g->builder.avgPool2d({x}, k, s, p, count_include_pad != 0).id;
}

int fusec_jit_graph_transpose(fusec_jit_graph *g, int x,
                              const long long *permutation, size_t rank) {
  std::vector<int64_t> perm;
  if (!g || !array(g, "transpose", "permutation", permutation, rank, perm))
    return -1;
  return g->builder.transpose({x}, perm).id;
}

int fusec_jit_graph_reshape(fusec_jit_graph *g, int x, const long long *shape,
                            size_t rank) {
  std::vector<int64_t> extents;
  if (!g || !array(g, "reshape", "shape", shape, rank, extents))
    return -1;
  return g->builder.reshape({x}, extents).id;
}

int fusec_jit_graph_cast(fusec_jit_graph *g, int x, fusec_jit_dtype dtype) {
  if (!g)
    return -1;
  return g->builder.cast({x}, static_cast<jit::DType>(dtype)).id;
}

int fusec_jit_graph_slice(fusec_jit_graph *g, int x, const long long *offsets,
                          const long long *sizes, size_t rank) {
  std::vector<int64_t> o, s;
  if (!g || !array(g, "slice", "offsets", offsets, rank, o) ||
      !array(g, "slice", "sizes", sizes, rank, s))
    return -1;
  return g->builder.slice({x}, o, s).id;
}

int fusec_jit_graph_concat(fusec_jit_graph *g, const int *values,
                           size_t num_values, long long axis) {
  std::vector<jit::Tensor> tensors;
  if (!g || !tensorArray(g, "concat", values, num_values, tensors))
    return -1;
  return g->builder.concat(tensors, axis).id;
}

int fusec_jit_graph_split(fusec_jit_graph *g, int x, long long axis,
                          const long long *sizes, size_t num_sizes,
                          int *results) {
  std::vector<int64_t> s;
  if (!g || !array(g, "split", "sizes", sizes, num_sizes, s))
    return -1;
  if (!results && num_sizes) {
    g->builder.recordError("split: results is NULL; pass room for " +
                           std::to_string(num_sizes) + " values");
    return -1;
  }
  std::vector<jit::Tensor> pieces = g->builder.split({x}, axis, s);
  if (pieces.empty())
    return -1;
  for (auto [i, t] : llvm::enumerate(pieces))
    results[i] = t.id;
  return static_cast<int>(pieces.size());
}

int fusec_jit_graph_op(fusec_jit_graph *g, const char *name,
                       const int *operands, size_t num_operands,
                       const char *attributes) {
  std::vector<jit::Tensor> values;
  if (!g || !tensorArray(g, name ? name : "op", operands, num_operands, values))
    return -1;
  return g->builder.op(name ? name : "", values, attributes ? attributes : "")
      .id;
}

int fusec_jit_graph_op_results(fusec_jit_graph *g, const char *name,
                               const int *operands, size_t num_operands,
                               const char *attributes, int *results,
                               size_t capacity) {
  std::vector<jit::Tensor> values;
  if (!g || !tensorArray(g, name ? name : "op", operands, num_operands, values))
    return -1;
  std::vector<jit::Tensor> out = g->builder.opResults(
      name ? name : "", values, attributes ? attributes : "");
  if (out.empty())
    return -1;
  if (!results || capacity < out.size()) {
    g->builder.recordError(std::string(name ? name : "op") + " has " +
                           std::to_string(out.size()) +
                           " results; pass room for them");
    return -1;
  }
  for (auto [i, t] : llvm::enumerate(out))
    results[i] = t.id;
  return static_cast<int>(out.size());
}

void fusec_jit_graph_output(fusec_jit_graph *g, int x) {
  if (g)
    g->builder.output({x});
}

long long fusec_jit_graph_shape(const fusec_jit_graph *g, int x,
                                long long *shape, size_t capacity) {
  if (!g || x < 0)
    return -1;
  std::vector<int64_t> extents = g->builder.shape({x});
  if (shape && capacity >= extents.size())
    std::copy(extents.begin(), extents.end(), shape);
  return static_cast<long long>(extents.size());
}

const char *fusec_jit_graph_error(const fusec_jit_graph *g) {
  return g ? g->builder.error().c_str() : "null graph";
}

void fusec_jit_graph_clear_error(fusec_jit_graph *g) {
  if (g)
    g->builder.clearError();
}

const char *fusec_jit_graph_mlir(fusec_jit_graph *g) {
  if (!g)
    return "";
  g->text = g->builder.mlir();
  return g->text.c_str();
}

void fusec_jit_tune_options_init(fusec_jit_tune_options *options) {
  jit::TuneOptions defaults;
  *options = fusec_jit_tune_options{};
  options->device = defaults.device;
  options->seed = defaults.seed;
  options->repeat = defaults.repeat;
  options->reference_gflop = defaults.referenceGflop;
}

fusec_jit_tuning *fusec_jit_tune(const char *mlir, const char *name,
                                 const fusec_jit_tune_options *options,
                                 fusec_jit_tune_callback callback,
                                 void *user_data) {
  auto *t = new (std::nothrow) fusec_jit_tuning;
  if (!t)
    return nullptr;
  if (!mlir) {
    t->result.status = jit::TuneStatus::InvalidArgument;
    t->result.error = "fusec_jit_tune: the graph text is null";
    return t;
  }
  jit::TuneCallback forward;
  if (callback)
    forward = [&](const jit::TuneMessage &m) {
      callback(static_cast<fusec_jit_message_kind>(m.kind), m.text.c_str(),
               m.located, user_data);
    };
  try {
    t->result = jit::tune(mlir, toTuneOptions(options), forward,
                          name ? name : "<graph>");
  } catch (const std::bad_alloc &) {
    // Nothing may throw through a C interface.
    t->result = jit::TuneResult();
    t->result.status = jit::TuneStatus::Failed;
    t->result.error = "fusec_jit_tune: out of host memory";
  }
  return t;
}

void fusec_jit_tuning_free(fusec_jit_tuning *tuning) { delete tuning; }

fusec_jit_tune_status fusec_jit_tuning_status(const fusec_jit_tuning *t) {
  return t ? static_cast<fusec_jit_tune_status>(t->result.status)
           : FUSEC_JIT_TUNE_INVALID_ARGUMENT;
}

const char *fusec_jit_tune_status_name(fusec_jit_tune_status status) {
  switch (status) {
  case FUSEC_JIT_TUNE_OK:
    return "ok";
  case FUSEC_JIT_TUNE_INVALID_ARGUMENT:
    return "invalid_argument";
  case FUSEC_JIT_TUNE_INVALID_GRAPH:
    return "invalid_graph";
  case FUSEC_JIT_TUNE_NO_DEVICE:
    return "no_device";
  case FUSEC_JIT_TUNE_FAILED:
    return "failed";
  }
  return "unknown";
}

const char *fusec_jit_tuning_error(const fusec_jit_tuning *t) {
  return t ? t->result.error.c_str() : "null tuning";
}

const char *fusec_jit_tuning_warnings(const fusec_jit_tuning *t) {
  return t ? t->result.warnings.c_str() : "";
}

const char *fusec_jit_tuning_database(const fusec_jit_tuning *t) {
  return t ? t->result.database.c_str() : "";
}

double fusec_jit_tuning_seconds(const fusec_jit_tuning *t) {
  return t ? t->result.seconds : 0;
}

size_t fusec_jit_tuning_num_kernels(const fusec_jit_tuning *t) {
  return t ? t->result.kernels.size() : 0;
}

int fusec_jit_tuning_kernel(const fusec_jit_tuning *t, size_t index,
                            const char **kernel, const char **family,
                            const char **tile, double *heuristic_ms,
                            double *tuned_ms) {
  if (!t || index >= t->result.kernels.size())
    return 0;
  const jit::TunedKernel &k = t->result.kernels[index];
  if (kernel)
    *kernel = k.kernel.c_str();
  if (family)
    *family = k.family.c_str();
  if (tile)
    *tile = k.tile.c_str();
  if (heuristic_ms)
    *heuristic_ms = k.heuristicMs;
  if (tuned_ms)
    *tuned_ms = k.tunedMs;
  return 1;
}

const char *fusec_jit_chip_for_device(int major, int minor) {
  // A handful of architectures: keep one string per (major, minor) seen.
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::string> chips;
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = chips.try_emplace({major, minor});
  if (inserted)
    it->second = TargetDescription::chipForDevice(major, minor);
  return it->second.c_str();
}

void fusec_jit_clear_memory_cache(void) { jit::clearMemoryCache(); }

const char *fusec_jit_version(void) {
  static const std::string version = jit::version();
  return version.c_str();
}

} // extern "C"
