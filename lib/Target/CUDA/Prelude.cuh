//===- Prelude.cuh - What fusec's CUDA C kernels may use -------*- CUDA -*-===//
//
// The CUDA C printer copies the sections of this file that a translation
// unit's kernels use, once each and in this file's order, before the
// kernels. A section runs from its `//--- NAME` line (not copied) to the next
// one; blank lines at its ends are dropped and one blank line follows it.
// This header is not copied. The build embeds this file; the names are the
// printer's (kHelperSections), and it stops with an error if they disagree.
//
// NVRTC finds cuda_fp16.h only in a toolkit's include directory, so nothing
// here includes a header: fusec's kernels only store and convert halves,
// which the structs below do as CUDA does.
//
//===----------------------------------------------------------------------===//

//--- half
// f16 as its bits; conversions round to nearest even.
struct alignas(2) fusec_half {
  unsigned short bits;
};
__device__ __forceinline__ float fusec_half2float(fusec_half x) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x.bits));
  return r;
}
__device__ __forceinline__ fusec_half fusec_float2half_rn(float x) {
  fusec_half r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}

//--- bfloat16
// bf16 as its bits: the high half of an f32.
struct alignas(2) fusec_bfloat16 {
  unsigned short bits;
};
__device__ __forceinline__ float fusec_bfloat162float(fusec_bfloat16 x) {
  return __int_as_float((unsigned)x.bits << 16);
}
__device__ __forceinline__ fusec_bfloat16 fusec_float2bfloat16_rn(float x) {
  fusec_bfloat16 r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(x));
  return r;
}

//--- vec
// MLIR's vector<NxT>, aligned like an LLVM vector (up to the 16 bytes of one
// access), so that moving one is a single wide load or store.
template <typename T, int N>
struct alignas(sizeof(T) * N % 16 == 0   ? 16
               : sizeof(T) * N % 8 == 0 ? 8
               : sizeof(T) * N % 4 == 0 ? 4
               : sizeof(T) * N % 2 == 0 ? 2
                                        : 1) fusec_vec {
  T v[N];
};

//--- array
// An LLVM struct of N values of one type (matrix fragments, accumulators).
template <typename T, int N>
struct fusec_array {
  T v[N];
};

//--- bitcast
// The bits of `from` as a `To`.
template <typename To, typename From>
__device__ __forceinline__ To fusec_bitcast(const From &from) {
  static_assert(sizeof(To) == sizeof(From), "bitcast between sizes");
  To to;
  memcpy(&to, &from, sizeof(To));
  return to;
}

//--- tensor_map
// A TMA descriptor (CUtensorMap), encoded by the runtime, passed by value.
struct alignas(64) fusec_tensor_map {
  unsigned long long opaque[16];
};

//--- maximumf
// arith.maximumf: NaN if either operand is NaN (fmaxf returns the other).
__device__ __forceinline__ float fusec_maximumf(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

//--- minimumf
// arith.minimumf: NaN if either operand is NaN (fminf returns the other).
__device__ __forceinline__ float fusec_minimumf(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

//--- shared_memory
// All of a block's shared memory: the launch's dynamic shared memory.
extern __shared__ __align__(1024) signed char fusec_smem[];
