/*===- fusec_runtime.h - C API of the fusec runtime ---------------*- C -*-===*\
|*                                                                            *|
|* Loads fusec artifacts (PTX plus a launch plan) and runs them on a CUDA     *|
|* device. A thin wrapper over the C++ API in Runtime.h, for C programs and   *|
|* foreign-function interfaces (ctypes, cffi, Rust).                          *|
|*                                                                            *|
|* Errors: every function that can fail returns a fusec_status; on failure    *|
|* fusec_last_error_message() gives the message, which says what went wrong  *|
|* and what to do. Messages are per thread.                                   *|
|*                                                                            *|
|*   fusec_device *device;                                                    *|
|*   fusec_module *module;                                                    *|
|*   if (fusec_device_open(0, &device) != FUSEC_OK ||                         *|
|*       fusec_module_load_file(device, "graph.ptx", &module) != FUSEC_OK)    *|
|*     fprintf(stderr, "%s\n", fusec_last_error_message());                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FUSEC_RUNTIME_FUSEC_RUNTIME_H
#define FUSEC_RUNTIME_FUSEC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as fusec::runtime::StatusCode. */
typedef enum fusec_status {
  FUSEC_OK = 0,
  FUSEC_ERROR_INVALID_ARGUMENT = 1,
  FUSEC_ERROR_IO = 2,
  FUSEC_ERROR_INVALID_ARTIFACT = 3,
  FUSEC_ERROR_NO_DRIVER = 4,
  FUSEC_ERROR_NO_DEVICE = 5,
  FUSEC_ERROR_UNSUPPORTED_DEVICE = 6,
  FUSEC_ERROR_DRIVER = 7,
  FUSEC_ERROR_NO_COMPILER = 8,
  FUSEC_ERROR_COMPILE = 9
} fusec_status;

typedef enum fusec_dtype {
  FUSEC_DTYPE_F32 = 0,
  FUSEC_DTYPE_F16 = 1,
  FUSEC_DTYPE_BF16 = 2
} fusec_dtype;

typedef struct fusec_device fusec_device;
typedef struct fusec_module fusec_module;

/* A device address (CUdeviceptr). */
typedef uint64_t fusec_device_ptr;
/* A CUstream or cudaStream_t; NULL is the legacy default stream. */
typedef void *fusec_stream;

/* A buffer handed to fusec_module_run: device address and size in bytes. */
typedef struct fusec_buffer {
  fusec_device_ptr ptr;
  uint64_t bytes;
} fusec_buffer;

/* What the plan says about one graph input or output. `shape` points into
   the module and lives as long as it. */
typedef struct fusec_buffer_info {
  fusec_dtype dtype;
  size_t rank;
  const int64_t *shape;
  uint64_t bytes;
} fusec_buffer_info;

/* "FUSEC_OK", "FUSEC_ERROR_NO_DRIVER", ... */
const char *fusec_status_name(fusec_status status);

/* The message of the last failed call on this thread ("" if none). Valid
   until the next failing call on the same thread. */
const char *fusec_last_error_message(void);

/* ---- Devices ------------------------------------------------------------ */

/* Number of CUDA devices (0 when the driver sees none). Fails with
   FUSEC_ERROR_NO_DRIVER when libcuda.so.1 cannot be loaded. */
fusec_status fusec_device_count(int *count);

/* Opens device `ordinal` (retains its primary context). */
fusec_status fusec_device_open(int ordinal, fusec_device **device);

/* Releases the handle. Modules loaded on the device keep it alive. NULL is
   ignored. */
void fusec_device_release(fusec_device *device);

/* The device's name, valid while the handle is. */
const char *fusec_device_name(const fusec_device *device);

void fusec_device_compute_capability(const fusec_device *device, int *major,
                                     int *minor);

/* The device's streaming multiprocessors (0 for a null handle). */
int fusec_device_multiprocessor_count(const fusec_device *device);

fusec_status fusec_device_alloc(fusec_device *device, uint64_t bytes,
                                fusec_device_ptr *ptr);
fusec_status fusec_device_free(fusec_device *device, fusec_device_ptr ptr);
/* Synchronous copies, ordered with the legacy default stream. */
fusec_status fusec_device_copy_to_device(fusec_device *device,
                                         fusec_device_ptr dst, const void *src,
                                         uint64_t bytes);
fusec_status fusec_device_copy_to_host(fusec_device *device, void *dst,
                                       fusec_device_ptr src, uint64_t bytes);
/* Waits for `stream`; reports errors raised by kernels that ran on it. */
fusec_status fusec_device_synchronize(fusec_device *device,
                                      fusec_stream stream);

/* ---- Modules ------------------------------------------------------------ */

/* Loads an artifact from memory (`length` bytes, no NUL needed). */
fusec_status fusec_module_load(fusec_device *device, const char *artifact,
                               size_t length, fusec_module **module);

/* Loads an artifact file. */
fusec_status fusec_module_load_file(fusec_device *device, const char *path,
                                    fusec_module **module);

/* Frees the module's workspaces and unloads it. NULL is ignored. */
void fusec_module_release(fusec_module *module);

size_t fusec_module_num_inputs(const fusec_module *module);
size_t fusec_module_num_outputs(const fusec_module *module);
fusec_status fusec_module_input_info(const fusec_module *module, size_t index,
                                     fusec_buffer_info *info);
fusec_status fusec_module_output_info(const fusec_module *module, size_t index,
                                      fusec_buffer_info *info);

/* Enqueues the plan on `stream`: one buffer per graph input and output, in
   order, each exactly the size the plan gives it, no output sharing memory
   with an input or another output (FUSEC_ERROR_INVALID_ARGUMENT naming
   both). Returns once enqueued; fusec_device_synchronize waits and reports
   kernel faults.

   Any thread may call it, on any stream, while other runs of the module are
   unfinished: each run gets intermediates (a workspace) that no unfinished
   run on another stream uses, and a run captured into a CUDA graph gets
   intermediates the graph owns. */
fusec_status fusec_module_run(fusec_module *module, fusec_stream stream,
                              const fusec_buffer *inputs, size_t num_inputs,
                              const fusec_buffer *outputs, size_t num_outputs);

/* Bytes of one workspace: the plan's intermediates (0 when it has none). */
uint64_t fusec_module_workspace_bytes(const fusec_module *module);

/* Workspaces the module holds now (the first is allocated at load; one more
   for each stream that runs while the others are busy, up to the maximum).
   Device memory held: count * fusec_module_workspace_bytes. */
size_t fusec_module_workspace_count(const fusec_module *module);

/* The most workspaces the module allocates (default 4, at least 1): past
   it, a run waits on the device for the least recently used one. */
void fusec_module_set_max_workspaces(fusec_module *module, size_t count);

/* fusec_module_run with the caller's workspace: at least
   fusec_module_workspace_bytes bytes, 256-byte aligned, sharing no memory
   with the inputs and outputs, and used by nothing else until the run has
   finished on `stream`. */
fusec_status
fusec_module_run_with_workspace(fusec_module *module, fusec_stream stream,
                                const fusec_buffer *inputs, size_t num_inputs,
                                const fusec_buffer *outputs, size_t num_outputs,
                                fusec_buffer workspace);

/* ---- Training ----------------------------------------------------------- */
/* A training artifact (`fusec graph.mlir --train`, docs/Training.md) holds a
   forward plan and a backward plan. A training module loads both; a
   training step owns the tensors the forward saves for the backward (device
   memory) and runs the two. */
typedef struct fusec_training_module fusec_training_module;
typedef struct fusec_training_step fusec_training_step;

/* Loads a training artifact from memory (`length` bytes) or a file. */
fusec_status fusec_training_load(fusec_device *device, const char *artifact,
                                 size_t length, fusec_training_module **module);
fusec_status fusec_training_load_file(fusec_device *device, const char *path,
                                      fusec_training_module **module);
/* Unloads the module; its steps must be released first. NULL is ignored. */
void fusec_training_release(fusec_training_module *module);
/* The graph's arguments and results, as the forward takes and returns
   them. */
size_t fusec_training_num_args(const fusec_training_module *module);
size_t fusec_training_num_results(const fusec_training_module *module);
fusec_status fusec_training_arg_info(const fusec_training_module *module,
                                     size_t index, fusec_buffer_info *info);
fusec_status fusec_training_result_info(const fusec_training_module *module,
                                        size_t index, fusec_buffer_info *info);
/* The backward takes one gradient per differentiable result: the i-th is of
   result fusec_training_grad_result(module, i), of its type. It returns one
   gradient per differentiated argument: the i-th is of argument
   fusec_training_wrt(module, i), of its type. (-1 for an index out of
   range.) */
size_t fusec_training_num_grads(const fusec_training_module *module);
int64_t fusec_training_grad_result(const fusec_training_module *module,
                                   size_t index);
size_t fusec_training_num_wrt(const fusec_training_module *module);
int64_t fusec_training_wrt(const fusec_training_module *module, size_t index);
/* The results of the forward that the backward reads again, where the
   caller holds them: the i-th is result fusec_training_forward_result(module,
   i) (-1 for an index out of range). */
size_t fusec_training_num_forward_results(const fusec_training_module *module);
int64_t fusec_training_forward_result(const fusec_training_module *module,
                                      size_t index);
/* The arguments the backward reads again: the i-th is argument
   fusec_training_forward_arg(module, i) (-1 for an index out of range). */
size_t fusec_training_num_forward_args(const fusec_training_module *module);
int64_t fusec_training_forward_arg(const fusec_training_module *module,
                                   size_t index);
/* The tensors the forward saves, and their bytes (what each step holds). */
size_t fusec_training_num_saved(const fusec_training_module *module);
uint64_t fusec_training_saved_bytes(const fusec_training_module *module);

/* A step: allocates the saved tensors. Release it before its module. */
fusec_status fusec_training_step_create(fusec_training_module *module,
                                        fusec_training_step **step);
void fusec_training_step_release(fusec_training_step *step);
/* Enqueues the forward: one buffer per argument and per result; the saved
   tensors stay in the step. The backward reads some arguments and results
   again (fusec_training_forward_result): keep them alive and unchanged until
   it has run. */
fusec_status
fusec_training_step_forward(fusec_training_step *step, fusec_stream stream,
                            const fusec_buffer *args, size_t num_args,
                            const fusec_buffer *results, size_t num_results);
/* Enqueues the backward of the step's last forward: the result gradients
   in, the argument gradients out (see fusec_training_grad_result and
   fusec_training_wrt). */
fusec_status fusec_training_step_backward(
    fusec_training_step *step, fusec_stream stream, const fusec_buffer *grads,
    size_t num_grads, const fusec_buffer *arg_grads, size_t num_arg_grads);

/* The two plans as modules, for callers that hold the saved tensors
   themselves (a framework's autograd, say) instead of in a step. The forward
   plan's inputs are the arguments; its outputs are the results, then the
   saved tensors. The backward plan's inputs are the arguments it reads again
   (fusec_training_forward_arg), the results it reads again
   (fusec_training_forward_result), the saved tensors and the result gradients
   (fusec_training_grad_result), in that order; its outputs are the argument
   gradients (fusec_training_wrt). Run them with fusec_module_run or
   fusec_module_run_with_workspace. The handles belong to the training module:
   valid while it is loaded; fusec_module_release ignores them. */
fusec_module *fusec_training_forward_plan(fusec_training_module *module);
fusec_module *fusec_training_backward_plan(fusec_training_module *module);

/* ---- Pointers ----------------------------------------------------------- */

/* The ordinal (as fusec_device_open takes it) of the device that holds
   `ptr`: device memory, managed memory or registered host memory, as the
   driver's unified addressing knows it. An address the driver does not know
   (plain host memory, a freed or made-up pointer) fails with
   FUSEC_ERROR_INVALID_ARGUMENT. */
fusec_status fusec_pointer_device(fusec_device_ptr ptr, int *ordinal);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUSEC_RUNTIME_FUSEC_RUNTIME_H */
