// fusec artifact v1
// fusec-plan: {"buffers":[{"bytes":864,"dtype":"f32","id":0,"index":0,"role":"input","shape":[4,9,6]},{"bytes":864,"dtype":"f32","id":1,"index":0,"role":"output","shape":[4,9,6]},{"bytes":864,"dtype":"f32","id":2,"index":1,"role":"output","shape":[4,9,6]}],"format":"fusec-plan","graph":"g","steps":[{"args":[0,1],"block":[256,1,1],"grid":[24,1,1],"kernel":"k0_softmax","kind":"launch","shared_bytes":1024},{"args":[0,2],"block":[256,1,1],"grid":[36,1,1],"kernel":"k1_softmax","kind":"launch","shared_bytes":1024}],"target":{"arch":"sm_90","kind":"cuda"},"version":1}
// fusec-kernels: [{"family":"row_reduction","kernel":"k0_softmax","signature":"8aa700536519fe294fdc54bd3107322a","source":"heuristic"},{"family":"row_reduction","kernel":"k1_softmax","signature":"0131d90bdcf7b64f059d9ae851ff60c8","source":"heuristic"}]
// CUDA C printed by fusec from its tiled kernels. Compile it with NVRTC and
// --fmad=false (not --use_fast_math) to compute what the PTX artifact does.

// arith.maximumf: NaN if either operand is NaN (fmaxf returns the other).
__device__ __forceinline__ float fusec_maximumf(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

// All of a block's shared memory: the launch's dynamic shared memory.
extern __shared__ __align__(1024) signed char fusec_smem[];

// k0_softmax: row_reduction
extern "C" __global__ void __launch_bounds__(256) k0_softmax(float* arg0, float* arg1) {
  float* view = (float*)(fusec_smem);
  int block_id_x = blockIdx.x;
  int thread_id_x = threadIdx.x;
  int v1 = (unsigned)block_id_x / 6u;
  int v2 = (unsigned)block_id_x % 6u;
  float arg3 = __int_as_float(0xff800000) /* -inf */;
  for (int arg2 = thread_id_x; arg2 < 9; arg2 += 256) {
    int v48 = v1 * 9;
    int v49 = v48 + arg2;
    int v50 = v49 * 6;
    int v51 = v50 + v2;
    int v52 = (unsigned)v51 % 6u;
    int v53 = (unsigned)v51 / 6u;
    int v54 = (unsigned)v53 % 9u;
    int v55 = (unsigned)v51 / 54u;
    float v56 = arg0[v55 * 54 + v54 * 6 + v52];
    float v57 = fusec_maximumf(arg3, v56);
    arg3 = v57;
  }
  float shuffleResult = __shfl_xor_sync(0xffffffff, arg3, 16, 32);
  float v4 = fusec_maximumf(arg3, shuffleResult);
  float shuffleResult_2 = __shfl_xor_sync(0xffffffff, v4, 8, 32);
  float v5 = fusec_maximumf(v4, shuffleResult_2);
  float shuffleResult_4 = __shfl_xor_sync(0xffffffff, v5, 4, 32);
  float v6 = fusec_maximumf(v5, shuffleResult_4);
  float shuffleResult_6 = __shfl_xor_sync(0xffffffff, v6, 2, 32);
  float v7 = fusec_maximumf(v6, shuffleResult_6);
  float shuffleResult_8 = __shfl_xor_sync(0xffffffff, v7, 1, 32);
  float v8 = fusec_maximumf(v7, shuffleResult_8);
  int v9 = (unsigned)thread_id_x % 32u;
  bool v10 = v9 == 0;
  if (v10) {
    int v48_1 = (unsigned)thread_id_x / 32u;
    view[v48_1] = v8;
  }
  __syncthreads();
  float v11 = view[0];
  float v12 = view[1];
  float v13 = fusec_maximumf(v11, v12);
  float v14 = view[2];
  float v15 = fusec_maximumf(v13, v14);
  float v16 = view[3];
  float v17 = fusec_maximumf(v15, v16);
  float v18 = view[4];
  float v19 = fusec_maximumf(v17, v18);
  float v20 = view[5];
  float v21 = fusec_maximumf(v19, v20);
  float v22 = view[6];
  float v23 = fusec_maximumf(v21, v22);
  float v24 = view[7];
  float v25 = fusec_maximumf(v23, v24);
  __syncthreads();
  float arg3_1 = 0.0f;
  for (int arg2_1 = thread_id_x; arg2_1 < 9; arg2_1 += 256) {
    int v48_2 = v1 * 9;
    int v49_1 = v48_2 + arg2_1;
    int v50_1 = v49_1 * 6;
    int v51_1 = v50_1 + v2;
    int v52_1 = (unsigned)v51_1 % 6u;
    int v53_1 = (unsigned)v51_1 / 6u;
    int v54_1 = (unsigned)v53_1 % 9u;
    int v55_1 = (unsigned)v51_1 / 54u;
    float v56_1 = arg0[v55_1 * 54 + v54_1 * 6 + v52_1];
    float v57_1 = __fsub_rn(v56_1, v25);
    float v58 = expf(v57_1);
    float v59 = __fadd_rn(arg3_1, v58);
    arg3_1 = v59;
  }
  float shuffleResult_10 = __shfl_xor_sync(0xffffffff, arg3_1, 16, 32);
  float v27 = __fadd_rn(arg3_1, shuffleResult_10);
  float shuffleResult_12 = __shfl_xor_sync(0xffffffff, v27, 8, 32);
  float v28 = __fadd_rn(v27, shuffleResult_12);
  float shuffleResult_14 = __shfl_xor_sync(0xffffffff, v28, 4, 32);
  float v29 = __fadd_rn(v28, shuffleResult_14);
  float shuffleResult_16 = __shfl_xor_sync(0xffffffff, v29, 2, 32);
  float v30 = __fadd_rn(v29, shuffleResult_16);
  float shuffleResult_18 = __shfl_xor_sync(0xffffffff, v30, 1, 32);
  float v31 = __fadd_rn(v30, shuffleResult_18);
  if (v10) {
    int v48_3 = (unsigned)thread_id_x / 32u;
    view[v48_3] = v31;
  }
  __syncthreads();
  float v32 = view[0];
  float v33 = view[1];
  float v34 = __fadd_rn(v32, v33);
  float v35 = view[2];
  float v36 = __fadd_rn(v34, v35);
  float v37 = view[3];
  float v38 = __fadd_rn(v36, v37);
  float v39 = view[4];
  float v40 = __fadd_rn(v38, v39);
  float v41 = view[5];
  float v42 = __fadd_rn(v40, v41);
  float v43 = view[6];
  float v44 = __fadd_rn(v42, v43);
  float v45 = view[7];
  float v46 = __fadd_rn(v44, v45);
  __syncthreads();
  float v47 = __fdiv_rn(1.0f, v46);
  for (int arg2_2 = thread_id_x; arg2_2 < 9; arg2_2 += 256) {
    int v48_4 = v1 * 9;
    int v49_2 = v48_4 + arg2_2;
    int v50_2 = v49_2 * 6;
    int v51_2 = v50_2 + v2;
    int v52_2 = (unsigned)v51_2 % 6u;
    int v53_2 = (unsigned)v51_2 / 6u;
    int v54_2 = (unsigned)v53_2 % 9u;
    int v55_2 = (unsigned)v51_2 / 54u;
    float v56_2 = arg0[v55_2 * 54 + v54_2 * 6 + v52_2];
    float v57_2 = __fsub_rn(v56_2, v25);
    float v58_1 = expf(v57_2);
    float v59_1 = __fmul_rn(v58_1, v47);
    arg1[v55_2 * 54 + v54_2 * 6 + v52_2] = v59_1;
  }
}

// k1_softmax: row_reduction
extern "C" __global__ void __launch_bounds__(256) k1_softmax(float* arg0, float* arg1) {
  float* view = (float*)(fusec_smem);
  int block_id_x = blockIdx.x;
  int thread_id_x = threadIdx.x;
  float arg3 = __int_as_float(0xff800000) /* -inf */;
  for (int arg2 = thread_id_x; arg2 < 6; arg2 += 256) {
    int v46 = block_id_x * 6;
    int v47 = v46 + arg2;
    int v48 = (unsigned)v47 % 6u;
    int v49 = (unsigned)v47 / 6u;
    int v50 = (unsigned)v49 % 9u;
    int v51 = (unsigned)v47 / 54u;
    float v52 = arg0[v51 * 54 + v50 * 6 + v48];
    float v53 = fusec_maximumf(arg3, v52);
    arg3 = v53;
  }
  float shuffleResult = __shfl_xor_sync(0xffffffff, arg3, 16, 32);
  float v2 = fusec_maximumf(arg3, shuffleResult);
  float shuffleResult_2 = __shfl_xor_sync(0xffffffff, v2, 8, 32);
  float v3 = fusec_maximumf(v2, shuffleResult_2);
  float shuffleResult_4 = __shfl_xor_sync(0xffffffff, v3, 4, 32);
  float v4 = fusec_maximumf(v3, shuffleResult_4);
  float shuffleResult_6 = __shfl_xor_sync(0xffffffff, v4, 2, 32);
  float v5 = fusec_maximumf(v4, shuffleResult_6);
  float shuffleResult_8 = __shfl_xor_sync(0xffffffff, v5, 1, 32);
  float v6 = fusec_maximumf(v5, shuffleResult_8);
  int v7 = (unsigned)thread_id_x % 32u;
  bool v8 = v7 == 0;
  if (v8) {
    int v46_1 = (unsigned)thread_id_x / 32u;
    view[v46_1] = v6;
  }
  __syncthreads();
  float v9 = view[0];
  float v10 = view[1];
  float v11 = fusec_maximumf(v9, v10);
  float v12 = view[2];
  float v13 = fusec_maximumf(v11, v12);
  float v14 = view[3];
  float v15 = fusec_maximumf(v13, v14);
  float v16 = view[4];
  float v17 = fusec_maximumf(v15, v16);
  float v18 = view[5];
  float v19 = fusec_maximumf(v17, v18);
  float v20 = view[6];
  float v21 = fusec_maximumf(v19, v20);
  float v22 = view[7];
  float v23 = fusec_maximumf(v21, v22);
  __syncthreads();
  float arg3_1 = 0.0f;
  for (int arg2_1 = thread_id_x; arg2_1 < 6; arg2_1 += 256) {
    int v46_2 = block_id_x * 6;
    int v47_1 = v46_2 + arg2_1;
    int v48_1 = (unsigned)v47_1 % 6u;
    int v49_1 = (unsigned)v47_1 / 6u;
    int v50_1 = (unsigned)v49_1 % 9u;
    int v51_1 = (unsigned)v47_1 / 54u;
    float v52_1 = arg0[v51_1 * 54 + v50_1 * 6 + v48_1];
    float v53_1 = __fsub_rn(v52_1, v23);
    float v54 = expf(v53_1);
    float v55 = __fadd_rn(arg3_1, v54);
    arg3_1 = v55;
  }
  float shuffleResult_10 = __shfl_xor_sync(0xffffffff, arg3_1, 16, 32);
  float v25 = __fadd_rn(arg3_1, shuffleResult_10);
  float shuffleResult_12 = __shfl_xor_sync(0xffffffff, v25, 8, 32);
  float v26 = __fadd_rn(v25, shuffleResult_12);
  float shuffleResult_14 = __shfl_xor_sync(0xffffffff, v26, 4, 32);
  float v27 = __fadd_rn(v26, shuffleResult_14);
  float shuffleResult_16 = __shfl_xor_sync(0xffffffff, v27, 2, 32);
  float v28 = __fadd_rn(v27, shuffleResult_16);
  float shuffleResult_18 = __shfl_xor_sync(0xffffffff, v28, 1, 32);
  float v29 = __fadd_rn(v28, shuffleResult_18);
  if (v8) {
    int v46_3 = (unsigned)thread_id_x / 32u;
    view[v46_3] = v29;
  }
  __syncthreads();
  float v30 = view[0];
  float v31 = view[1];
  float v32 = __fadd_rn(v30, v31);
  float v33 = view[2];
  float v34 = __fadd_rn(v32, v33);
  float v35 = view[3];
  float v36 = __fadd_rn(v34, v35);
  float v37 = view[4];
  float v38 = __fadd_rn(v36, v37);
  float v39 = view[5];
  float v40 = __fadd_rn(v38, v39);
  float v41 = view[6];
  float v42 = __fadd_rn(v40, v41);
  float v43 = view[7];
  float v44 = __fadd_rn(v42, v43);
  __syncthreads();
  float v45 = __fdiv_rn(1.0f, v44);
  for (int arg2_2 = thread_id_x; arg2_2 < 6; arg2_2 += 256) {
    int v46_4 = block_id_x * 6;
    int v47_2 = v46_4 + arg2_2;
    int v48_2 = (unsigned)v47_2 % 6u;
    int v49_2 = (unsigned)v47_2 / 6u;
    int v50_2 = (unsigned)v49_2 % 9u;
    int v51_2 = (unsigned)v47_2 / 54u;
    float v52_2 = arg0[v51_2 * 54 + v50_2 * 6 + v48_2];
    float v53_2 = __fsub_rn(v52_2, v23);
    float v54_1 = expf(v53_2);
    float v55_1 = __fmul_rn(v54_1, v45);
    arg1[v51_2 * 54 + v50_2 * 6 + v48_2] = v55_1;
  }
}
