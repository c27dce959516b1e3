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
} fusec_jit_options;

typedef enum fusec_jit_source {
  FUSEC_JIT_COMPILED = 0,
  FUSEC_JIT_MEMORY_CACHE = 1,
  FUSEC_JIT_DISK_CACHE = 2
} fusec_jit_source;

typedef struct fusec_jit_result fusec_jit_result;

/* The defaults: sm_90, ieee, default tuning database, cache on. */
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

void fusec_jit_clear_memory_cache(void);
/* The release and commit of this build; static storage. */
const char *fusec_jit_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FUSEC_JIT_C_H */
