//===- CApi.cpp - The JIT library's C API ---------------------------------===//

#include "fusec/fusec_jit.h"
#include "fusec/JIT.h"

#include <new>

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
  return options;
}

extern "C" {

void fusec_jit_options_init(fusec_jit_options *options) {
  *options = fusec_jit_options{nullptr, nullptr, nullptr, nullptr, 1, nullptr};
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

void fusec_jit_clear_memory_cache(void) { jit::clearMemoryCache(); }

const char *fusec_jit_version(void) {
  static const std::string version = jit::version();
  return version.c_str();
}

} // extern "C"
