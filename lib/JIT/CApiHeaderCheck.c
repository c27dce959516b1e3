/* Compiles fusec_jit.h as C99: the header must stay valid C. */
#include "fusec/fusec_jit.h"
