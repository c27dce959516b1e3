/*===- CApiHeaderCheck.c - fusec_runtime.h compiles as C ------------------===*\
|*                                                                            *|
|* Built into the runtime library so that a C++-only construct slipping into  *|
|* the C header breaks the build rather than a user's C program.              *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "fusec/runtime/fusec_runtime.h"

/* Refer to a few declarations so that they are type-checked as C. */
typedef char fusecBufferIsTwoWords[sizeof(fusec_buffer) == 16 ? 1 : -1];

int fusecRuntimeCApiHeaderCheck(void) {
  fusec_buffer_info info = {FUSEC_DTYPE_F32, 0, 0, 0};
  fusec_status (*run)(fusec_module *, fusec_stream, const fusec_buffer *,
                      size_t, const fusec_buffer *, size_t) = fusec_module_run;
  (void)run;
  return (int)info.dtype + (int)FUSEC_OK;
}
