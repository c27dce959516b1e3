/*===- fusec_jit.h - The JIT library's C API ---------------------*- C -*-===*
 *
 * Compiles a graph (MLIR text or a file) to an artifact, with the kernel
 * cache, from C or any language with a C FFI. Load and run the artifact with
 * the runtime's C API (fusec/runtime/fusec_runtime.h: fusec_module_load,
 * fusec_module_run).
 *
 *   fusec_jit_options options;
 *   fusec_jit_options_init(&options);
 *   options.arch = "sm_90a";
 *   fusec_jit_result *r = fusec_jit_compile(text, "graph.mlir", &options);
 *   if (!fusec_jit_ok(r)) fprintf(stderr, "%s", fusec_jit_error(r));
 *   else fusec_module_load(device, fusec_jit_artifact(r, NULL), "graph", &m);
 *   fusec_jit_result_free(r);
 *
 * Every function may be called from several threads at once.
 *
 *===----------------------------------------------------------------------===*/

#ifndef FUSEC_JIT_C_H
#define FUSEC_JIT_C_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Null strings take the defaults of fusec::jit::Options (fusec/JIT.h). */
typedef struct fusec_jit_options {
  const char *arch;      /* "sm_90" when null */
  const char *fp32_math; /* "ieee" or "tf32" */
  const char *tuning_db; /* path, "none", or null for the default */
  const char *entry;     /* the graph function, or null */
  int cache;             /* non-zero: use the kernel cache */
  const char *cache_dir; /* null: $FUSEC_CACHE_DIR or the per-user default */
  const char *backend;   /* "ptx" (null) or "cuda" */
  long long sm_count;    /* SMs of the GPU; 0: the architecture's flagship */
  const char *gpu;       /* the GPU whose tuning entries apply, or null */
  /* Tile overrides: tiles[i] ("#fuse.tile<...>") for kernel
   * tile_kernels[i] ("k0_conv2d"), i < num_tiles. */
  const char *const *tile_kernels;
  const char *const *tiles;
  size_t num_tiles;
  /* Non-zero: compile a training step (fusec --train, docs/Training.md),
   * which fusec_training_load (fusec_runtime.h) loads; wrt[i], i < num_wrt,
   * are the arguments to differentiate (none: every argument a gradient
   * reaches). */
  int train;
  const unsigned *wrt;
  size_t num_wrt;
  /* Non-zero, with train: gradients the same bit for bit run to run
   * (fusec --deterministic). */
  int deterministic;
} fusec_jit_options;

typedef enum fusec_jit_source {
  FUSEC_JIT_COMPILED = 0,
  FUSEC_JIT_MEMORY_CACHE = 1,
  FUSEC_JIT_DISK_CACHE = 2
} fusec_jit_source;

typedef struct fusec_jit_result fusec_jit_result;

/* The defaults: sm_90, ptx, ieee, default tuning database, cache on, no
 * tile overrides. */
void fusec_jit_options_init(fusec_jit_options *options);

/* Never null (short of memory): check fusec_jit_ok. `name` names the graph
 * in messages and may be null; `options` may be null for the defaults. */
fusec_jit_result *fusec_jit_compile(const char *mlir, const char *name,
                                    const fusec_jit_options *options);
fusec_jit_result *fusec_jit_compile_file(const char *path,
                                         const fusec_jit_options *options);
void fusec_jit_result_free(fusec_jit_result *result);

int fusec_jit_ok(const fusec_jit_result *result);
/* "" on success; the located errors otherwise. */
const char *fusec_jit_error(const fusec_jit_result *result);
/* The artifact (NUL-terminated), and its size when `size` is not null. */
const char *fusec_jit_artifact(const fusec_jit_result *result, size_t *size);
const char *fusec_jit_warnings(const fusec_jit_result *result);
fusec_jit_source fusec_jit_result_source(const fusec_jit_result *result);
double fusec_jit_milliseconds(const fusec_jit_result *result);

/* ---- The reference interpreter ------------------------------------------
 * Evaluates a graph in float64 on the CPU (fusec::jit::evaluate). */

typedef enum fusec_jit_dtype {
  FUSEC_JIT_F32 = 0,
  FUSEC_JIT_F16 = 1,
  FUSEC_JIT_BF16 = 2
} fusec_jit_dtype;

/* A row-major host tensor of float64 values. */
typedef struct fusec_jit_host_tensor {
  const double *data;
  const long long *shape;
  size_t rank;
} fusec_jit_host_tensor;

typedef struct fusec_jit_evaluation fusec_jit_evaluation;

/* Never null (short of memory): check fusec_jit_evaluation_error. `entry`
 * and `name` may be null. */
fusec_jit_evaluation *fusec_jit_evaluate(const char *mlir, const char *name,
                                         const char *entry,
                                         const fusec_jit_host_tensor *inputs,
                                         size_t num_inputs);
void fusec_jit_evaluation_free(fusec_jit_evaluation *evaluation);
/* "" on success. */
const char *fusec_jit_evaluation_error(const fusec_jit_evaluation *evaluation);
size_t fusec_jit_evaluation_num_outputs(const fusec_jit_evaluation *evaluation);
/* Output `index`: its values (valid while the evaluation is), shape, rank
 * and dtype; null when `index` is out of range. */
const double *fusec_jit_evaluation_output(const fusec_jit_evaluation *evaluation,
                                          size_t index,
                                          const long long **shape,
                                          size_t *rank, fusec_jit_dtype *dtype);

/* A training step on the reference interpreter (jit::evaluateTraining):
 * the forward on `inputs`, the backward on `result_grads` (one per graph
 * result), differentiating arguments wrt[i], i < num_wrt (none: every
 * argument a gradient reaches). Never null (short of memory): check
 * fusec_jit_training_evaluation_error. */
typedef struct fusec_jit_training_evaluation fusec_jit_training_evaluation;
typedef enum fusec_jit_training_part {
  FUSEC_JIT_TRAINING_RESULTS = 0,  /* one per graph result */
  FUSEC_JIT_TRAINING_SAVED = 1,    /* the tensors the forward saves */
  FUSEC_JIT_TRAINING_GRADIENTS = 2 /* one per differentiated argument */
} fusec_jit_training_part;
fusec_jit_training_evaluation *fusec_jit_evaluate_training(
    const char *mlir, const char *name, const char *entry,
    const fusec_jit_host_tensor *inputs, size_t num_inputs,
    const fusec_jit_host_tensor *result_grads, size_t num_result_grads,
    const unsigned *wrt, size_t num_wrt);
void fusec_jit_training_evaluation_free(fusec_jit_training_evaluation *e);
/* "" on success. */
const char *
fusec_jit_training_evaluation_error(const fusec_jit_training_evaluation *e);
size_t
fusec_jit_training_evaluation_count(const fusec_jit_training_evaluation *e,
                                    fusec_jit_training_part part);
/* Tensor `index` of `part`, as fusec_jit_evaluation_output gives one. */
const double *
fusec_jit_training_evaluation_tensor(const fusec_jit_training_evaluation *e,
                                     fusec_jit_training_part part, size_t index,
                                     const long long **shape, size_t *rank,
                                     fusec_jit_dtype *dtype);
/* The argument whose gradient is gradient `index` (-1 out of range). */
long long
fusec_jit_training_evaluation_wrt(const fusec_jit_training_evaluation *e,
                                  size_t index);

/* The largest relative error (||x - ref|| / ||ref||) accepted for a GPU
 * result of `dtype`; `fp32_math` "tf32" or null/"ieee". */
double fusec_jit_tolerance(fusec_jit_dtype dtype, const char *fp32_math);

/* ---- Building a graph (fusec::jit::GraphBuilder) ---------------------------
 * Values are small integers. A failed call returns -1 and records an error
 * naming the op; the graph stays usable (a call given -1 fails in turn).
 * fusec_jit_graph_error keeps the first error until
 * fusec_jit_graph_clear_error, and while it is there fusec_jit_graph_mlir
 * is "": check once at the end, or after each call. Arrays of int64 are
 * `long long` pointers with a count; a NULL array with a non-zero count is
 * an error. */

typedef struct fusec_jit_graph fusec_jit_graph;

/* `name` names the graph function: any non-empty text (quoted in the MLIR
 * where needed); NULL for "graph". */
fusec_jit_graph *fusec_jit_graph_new(const char *name);
void fusec_jit_graph_free(fusec_jit_graph *graph);
/* `dtype` must be one of fusec_jit_dtype. */
int fusec_jit_graph_input(fusec_jit_graph *graph, const long long *shape,
                          size_t rank, fusec_jit_dtype dtype);
/* strides, padding (2 or 4 values) and dilation may be null for the
 * defaults; bias -1 for none. */
int fusec_jit_graph_conv2d(fusec_jit_graph *graph, int x, int filter,
                           const long long *strides, const long long *padding,
                           size_t num_padding, const long long *dilation,
                           long long groups, int bias);
int fusec_jit_graph_batch_norm(fusec_jit_graph *graph, int x, int mean,
                               int variance, int scale, int shift,
                               double epsilon);
/* "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "hardswish",
 * "softmax". */
int fusec_jit_graph_unary(fusec_jit_graph *graph, const char *op, int x);
/* "add", "sub", "mul", "div", "bias_add", "matmul". */
int fusec_jit_graph_binary(fusec_jit_graph *graph, const char *op, int a,
                           int b);
/* bias -1 for none. */
int fusec_jit_graph_linear(fusec_jit_graph *graph, int x, int weight, int bias);
/* scale, shift -1 for none. */
int fusec_jit_graph_layer_norm(fusec_jit_graph *graph, int x, int scale,
                               int shift, double epsilon);
int fusec_jit_graph_rms_norm(fusec_jit_graph *graph, int x, int scale,
                             double epsilon);
/* has_scale zero: 1/sqrt(head dim). */
int fusec_jit_graph_attention(fusec_jit_graph *graph, int q, int k, int v,
                              int causal, int has_scale, double scale);
int fusec_jit_graph_rope(fusec_jit_graph *graph, int x, int cos_table,
                         int sin_table, int interleaved);
/* No strides (NULL, 0): the kernel. */
int fusec_jit_graph_max_pool2d(fusec_jit_graph *graph, int x,
                               const long long *kernel, size_t num_kernel,
                               const long long *strides, size_t num_strides,
                               const long long *padding, size_t num_padding);
int fusec_jit_graph_avg_pool2d(fusec_jit_graph *graph, int x,
                               const long long *kernel, size_t num_kernel,
                               const long long *strides, size_t num_strides,
                               const long long *padding, size_t num_padding,
                               int count_include_pad);
int fusec_jit_graph_transpose(fusec_jit_graph *graph, int x,
                              const long long *permutation, size_t rank);
int fusec_jit_graph_reshape(fusec_jit_graph *graph, int x,
                            const long long *shape, size_t rank);
int fusec_jit_graph_cast(fusec_jit_graph *graph, int x, fusec_jit_dtype dtype);
int fusec_jit_graph_slice(fusec_jit_graph *graph, int x,
                          const long long *offsets, const long long *sizes,
                          size_t rank);
int fusec_jit_graph_concat(fusec_jit_graph *graph, const int *values,
                           size_t num_values, long long axis);
/* Writes the `num_sizes` pieces' values to `results` (room for num_sizes)
 * and returns their number, or -1. */
int fusec_jit_graph_split(fusec_jit_graph *graph, int x, long long axis,
                          const long long *sizes, size_t num_sizes,
                          int *results);
/* Any fuse op of one or more results (GraphBuilder::opResults), as
 * fusec_jit_graph_op: writes the results' values to `results` (room for
 * `capacity`) and returns their number, or -1. */
int fusec_jit_graph_op_results(fusec_jit_graph *graph, const char *name,
                               const int *operands, size_t num_operands,
                               const char *attributes, int *results,
                               size_t capacity);
/* Any fuse op of one result whose type follows from its operands
 * (GraphBuilder::op): `name` "fuse.rope" or "rope", `attributes` an MLIR
 * attribute dictionary with or without braces, or NULL/"" for none. */
int fusec_jit_graph_op(fusec_jit_graph *graph, const char *name,
                       const int *operands, size_t num_operands,
                       const char *attributes);
void fusec_jit_graph_output(fusec_jit_graph *graph, int x);
/* The rank of `x` (-1 for an invalid value); its extents go to `shape` when
 * it is not null and holds `capacity` >= rank values. */
long long fusec_jit_graph_shape(const fusec_jit_graph *graph, int x,
                                long long *shape, size_t capacity);
/* The first error not yet cleared, or "" while the graph is valid; valid
 * until the next call on the graph. */
const char *fusec_jit_graph_error(const fusec_jit_graph *graph);
/* Forgets the recorded error (the graph holds the calls that succeeded). */
void fusec_jit_graph_clear_error(fusec_jit_graph *graph);
/* The graph's MLIR text ("" while it has an error or no output); valid
 * until the next call on the graph. */
const char *fusec_jit_graph_mlir(fusec_jit_graph *graph);

/* ---- Autotuning (fusec::jit::tune) ----------------------------------------
 * `fusec tune` as a function: times each kernel's candidate tiles on a GPU,
 * each checked first, and records the fastest in the tuning database
 * (docs/Tuning.md). */

/* Null strings take the defaults of fusec::jit::TuneOptions. */
typedef struct fusec_jit_tune_options {
  const char *arch;        /* null: the GPU's own (sm_90a on an H100) */
  const char *fp32_math;   /* "ieee" (null) or "tf32" */
  const char *tuning_db;   /* the database written; null for the default */
  const char *entry;       /* the graph function, or null */
  int device;              /* the GPU that measures */
  unsigned long long seed; /* of the random inputs */
  unsigned repeat;         /* runs per timing, at least 1 */
  double reference_gflop;  /* larger kernels: checked against the
                              heuristic's output, not the reference */
} fusec_jit_tune_options;

/* Mirrors fusec::jit::TuneStatus. */
typedef enum fusec_jit_tune_status {
  FUSEC_JIT_TUNE_OK = 0,
  FUSEC_JIT_TUNE_INVALID_ARGUMENT = 1,
  FUSEC_JIT_TUNE_INVALID_GRAPH = 2,
  FUSEC_JIT_TUNE_NO_DEVICE = 3,
  FUSEC_JIT_TUNE_FAILED = 4
} fusec_jit_tune_status;

/* Mirrors fusec::jit::TuneMessage::Kind. */
typedef enum fusec_jit_message_kind {
  FUSEC_JIT_PROGRESS = 0,
  FUSEC_JIT_WARNING = 1,
  FUSEC_JIT_ERROR = 2
} fusec_jit_message_kind;

/* Receives each progress line (no newline), warning and error as it comes,
 * on the calling thread; `located`: the text is diagnostics located in the
 * graph (newlines included), else one sentence. `text` is valid during the
 * call. */
typedef void (*fusec_jit_tune_callback)(fusec_jit_message_kind kind,
                                        const char *text, int located,
                                        void *user_data);

typedef struct fusec_jit_tuning fusec_jit_tuning;

/* The defaults: the GPU's own arch, ieee, the default database, device 0,
 * seed 0, 10 runs per timing, 2 GFLOP. */
void fusec_jit_tune_options_init(fusec_jit_tune_options *options);

/* Never null (short of memory): check fusec_jit_tuning_status. `name`
 * names the graph in messages, `options` (null: the defaults) and
 * `callback` may be null. */
fusec_jit_tuning *fusec_jit_tune(const char *mlir, const char *name,
                                 const fusec_jit_tune_options *options,
                                 fusec_jit_tune_callback callback,
                                 void *user_data);
void fusec_jit_tuning_free(fusec_jit_tuning *tuning);
fusec_jit_tune_status fusec_jit_tuning_status(const fusec_jit_tuning *tuning);
/* "ok", "invalid_argument", "invalid_graph", "no_device", "failed";
 * static storage. */
const char *fusec_jit_tune_status_name(fusec_jit_tune_status status);
/* "" on success; the errors otherwise. */
const char *fusec_jit_tuning_error(const fusec_jit_tuning *tuning);
const char *fusec_jit_tuning_warnings(const fusec_jit_tuning *tuning);
/* The database written. */
const char *fusec_jit_tuning_database(const fusec_jit_tuning *tuning);
double fusec_jit_tuning_seconds(const fusec_jit_tuning *tuning);
/* The entries written; entry `index`'s kernel name, family, tile
 * ("#fuse.tile<...>") and the heuristic's and the recorded medians in ms,
 * each pointer optional; returns 0 when `index` is out of range. The
 * strings are valid while the tuning is. */
size_t fusec_jit_tuning_num_kernels(const fusec_jit_tuning *tuning);
int fusec_jit_tuning_kernel(const fusec_jit_tuning *tuning, size_t index,
                            const char **kernel, const char **family,
                            const char **tile, double *heuristic_ms,
                            double *tuned_ms);

/* The architecture fusec compiles for on a GPU of compute capability
 * major.minor ("sm_90a" for 9.0: wgmma and TMA); static storage. */
const char *fusec_jit_chip_for_device(int major, int minor);

void fusec_jit_clear_memory_cache(void);
/* The release and commit of this build; static storage. */
const char *fusec_jit_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FUSEC_JIT_C_H */
