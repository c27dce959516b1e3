// RUN: fusec-translate --fusec-to-cuda %s | FileCheck %s --enable-var-scope

// The printer's semantics op by op, on hand-written kernels: unsigned ops
// convert their operands, signed ones do not; index is 32-bit where the
// module's data layout says so (as fusec-tile-kernels writes it), else
// MLIR's default, 64-bit; f32 min/max
// propagate NaN unless they are maxnum/minnum; comparisons keep the
// ordered/unordered distinction; yields that swap loop-carried values go
// through temporaries.

// CHECK-LABEL: // k_int
// CHECK-NEXT: extern "C" __global__ void __launch_bounds__(64) k_int(int* [[A:arg0]], long long* [[L:arg1]]) {
gpu.module @ints attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
  gpu.func @k_int(%a: memref<16xi32>, %l: memref<4xi64>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c7_i32 = arith.constant 7 : i32
    %cm1 = arith.constant -1 : index
    %c4_i64 = arith.constant 4 : i64
    %min = arith.constant -9223372036854775808 : i64
    // CHECK: int [[T:thread_id_x]] = threadIdx.x;
    %t = gpu.thread_id x
    // CHECK-NEXT: int [[Q:v[0-9]+]] = (unsigned)[[T]] / 3u;
    %q = arith.divui %t, %c3 : index
    // CHECK-NEXT: int [[R:v[0-9]+]] = (unsigned)[[T]] % 3u;
    %r = arith.remui %t, %c3 : index
    // CHECK-NEXT: int [[S:v[0-9]+]] = [[T]] / 3;
    %s = arith.divsi %t, %c3 : index
    // CHECK-NEXT: int {{v[0-9]+}} = [[T]] % 3;
    %s2 = arith.remsi %t, %c3 : index
    // CHECK-NEXT: bool [[U:v[0-9]+]] = (unsigned)[[Q]] < 4294967295u;
    %u = arith.cmpi ult, %q, %cm1 : index
    // CHECK-NEXT: bool {{v[0-9]+}} = [[R]] < -1;
    %v = arith.cmpi slt, %r, %cm1 : index
    // CHECK-NEXT: int {{v[0-9]+}} = min((unsigned)[[Q]], (unsigned)[[R]]);
    %mu = arith.minui %q, %r : index
    // CHECK-NEXT: int {{v[0-9]+}} = max([[Q]], [[S]]);
    %ms = arith.maxsi %q, %s : index
    // CHECK-NEXT: long long [[Z:v[0-9]+]] = (long long)(unsigned)[[Q]];
    %z = arith.index_castui %q : index to i64
    // CHECK-NEXT: long long [[X:v[0-9]+]] = (long long)[[S]];
    %x = arith.index_cast %s : index to i64
    // CHECK-NEXT: long long {{v[0-9]+}} = (unsigned long long)[[X]] >> 4ll;
    %sh = arith.shrui %x, %c4_i64 : i64
    // CHECK-NEXT: long long {{v[0-9]+}} = [[X]] >> 4ll;
    %sa = arith.shrsi %x, %c4_i64 : i64
    // CHECK-NEXT: long long {{v[0-9]+}} = [[Z]] ^ (-9223372036854775807ll - 1);
    %xo = arith.xori %z, %min : i64
    // CHECK-NEXT: bool {{v[0-9]+}} = [[U]] != true;
    %true = arith.constant true
    %nu = arith.xori %u, %true : i1
    // CHECK-NEXT: int [[I32:v[0-9]+]] = [[S]];
    %i32 = arith.index_cast %s : index to i32
    // CHECK-NEXT: bool {{v[0-9]+}} = ([[I32]] & 1) != 0;
    %b = arith.trunci %i32 : i32 to i1
    // CHECK-NEXT: int [[QI:v[0-9]+]] = [[Q]] + 3;
    // CHECK-NEXT: [[A]][[[QI]]] = 7;
    %i = arith.addi %q, %c3 : index
    memref.store %c7_i32, %a[%i] : memref<16xi32>
    // CHECK-NEXT: [[L]][0] = [[Z]];
    memref.store %z, %l[%c0] : memref<4xi64>
    gpu.return
  }
}

// CHECK-LABEL: // k_float
// CHECK-NEXT: extern "C" __global__ void k_float(float* [[F:arg0]], fusec_bfloat16* [[H:arg1]]) {
gpu.module @floats attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
  gpu.func @k_float(%f: memref<16xf32>, %h: memref<16xbf16>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nan = arith.constant 0x7FC00000 : f32
    %c2_i32 = arith.constant 2 : i32
    %c32_i32 = arith.constant 32 : i32
    // CHECK: float [[A:v[0-9]+]] = [[F]][0];
    %a = memref.load %f[%c0] : memref<16xf32>
    // CHECK-NEXT: float [[B:v[0-9]+]] = [[F]][1];
    %b = memref.load %f[%c1] : memref<16xf32>
    // CHECK-NEXT: float {{v[0-9]+}} = fusec_maximumf([[A]], [[B]]);
    %0 = arith.maximumf %a, %b : f32
    // CHECK-NEXT: float {{v[0-9]+}} = fusec_minimumf([[A]], __int_as_float(0x7fc00000) /* nan */);
    %1 = arith.minimumf %a, %nan : f32
    // CHECK-NEXT: float {{v[0-9]+}} = fmaxf([[A]], [[B]]);
    %2 = arith.maxnumf %a, %b : f32
    // CHECK-NEXT: bool {{v[0-9]+}} = ([[A]] < [[B]] || [[A]] > [[B]]);
    %3 = arith.cmpf one, %a, %b : f32
    // CHECK-NEXT: bool {{v[0-9]+}} = [[A]] != [[B]];
    %4 = arith.cmpf une, %a, %b : f32
    // CHECK-NEXT: bool {{v[0-9]+}} = !([[A]] >= [[B]]);
    %5 = arith.cmpf ult, %a, %b : f32
    // CHECK-NEXT: bool {{v[0-9]+}} = ([[A]] != [[A]] || [[B]] != [[B]]);
    %6 = arith.cmpf uno, %a, %b : f32
    // CHECK-NEXT: float [[M:v[0-9]+]] = __fmul_rn([[A]], [[B]]);
    %7 = arith.mulf %a, %b : f32
    // CHECK-NEXT: float [[S:v[0-9]+]] = __fadd_rn([[M]], [[B]]);
    %8 = arith.addf %7, %b : f32
    // CHECK-NEXT: fusec_bfloat16 [[T:v[0-9]+]] = fusec_float2bfloat16_rn([[S]]);
    %9 = arith.truncf %8 : f32 to bf16
    // CHECK-NEXT: float {{v[0-9]+}} = fusec_bfloat162float([[T]]);
    %10 = arith.extf %9 : bf16 to f32
    // CHECK-NEXT: int [[I:v[0-9]+]] = __float2int_rz([[A]]);
    %11 = arith.fptosi %a : f32 to i32
    // CHECK-NEXT: float {{v[0-9]+}} = (float)(unsigned)[[I]];
    %12 = arith.uitofp %11 : i32 to f32
    // CHECK-NEXT: float {{v[0-9]+}} = (float)[[I]];
    %13 = arith.sitofp %11 : i32 to f32
    // CHECK-NEXT: int {{v[0-9]+}} = __float_as_int([[A]]);
    %14 = arith.bitcast %a : f32 to i32
    // CHECK-NEXT: float {{[a-zA-Z_0-9]+}} = __shfl_xor_sync(0xffffffff, [[A]], 2, 32);
    %15, %valid = gpu.shuffle xor %a, %c2_i32, %c32_i32 : f32
    // CHECK-NEXT: float {{[a-zA-Z_0-9]+}} = __shfl_down_sync(0xffffffff, [[A]], 2, 32);
    %16, %valid2 = gpu.shuffle down %a, %c2_i32, %c32_i32 : f32
    // CHECK-NEXT: float {{v[0-9]+}} = __fsqrt_rn([[A]]);
    %17 = math.sqrt %a : f32
    // CHECK-NEXT: [[H]][1] = fusec_bfloat16{0x3f80};
    %one = arith.constant 1.0 : bf16
    memref.store %one, %h[%c1] : memref<16xbf16>
    gpu.return
  }
}

// CHECK-LABEL: // k_control
gpu.module @control attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
  gpu.func @k_control(%f: memref<16xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    // CHECK: float [[X:arg[0-9]+]] = 0.0f;
    // CHECK-NEXT: float [[Y:arg[0-9]+]] = 1.0f;
    // CHECK-NEXT: for (int [[I:arg[0-9]+]] = 0; [[I]] < 16; [[I]] += 1) {
    // CHECK-NEXT: auto [[X]]_next = [[Y]];
    // CHECK-NEXT: auto [[Y]]_next = [[X]];
    // CHECK-NEXT: [[X]] = [[X]]_next;
    // CHECK-NEXT: [[Y]] = [[Y]]_next;
    // CHECK-NEXT: }
    %r:2 = scf.for %i = %c0 to %c16 step %c1 iter_args(%x = %zero, %y = %one) -> (f32, f32) {
      scf.yield %y, %x : f32, f32
    }
    // CHECK-NEXT: float [[W:arg[0-9_]+]] = [[X]];
    // CHECK-NEXT: float [[R:v[0-9]+]];
    // CHECK-NEXT: while (true) {
    // CHECK-NEXT: bool [[C:v[0-9]+]] = [[W]] < 8.0f;
    // CHECK-NEXT: [[R]] = [[W]];
    // CHECK-NEXT: if (![[C]])
    // CHECK-NEXT: break;
    // CHECK-NEXT: float [[N:v[0-9_]+]] = __fadd_rn([[R]], 1.0f);
    // CHECK-NEXT: [[W]] = [[N]];
    // CHECK-NEXT: }
    %eight = arith.constant 8.0 : f32
    %w = scf.while (%arg = %r#0) : (f32) -> f32 {
      %c = arith.cmpf olt, %arg, %eight : f32
      scf.condition(%c) %arg : f32
    } do {
    ^bb0(%arg: f32):
      %n = arith.addf %arg, %one : f32
      scf.yield %n : f32
    }
    // CHECK-NEXT: bool [[P:v[0-9]+]] = [[R]] > 0.0f;
    // CHECK-NEXT: float [[S:v[0-9]+]];
    // CHECK-NEXT: if ([[P]]) {
    // CHECK-NEXT: [[S]] = [[R]];
    // CHECK-NEXT: } else {
    // CHECK-NEXT: [[S]] = [[Y]];
    // CHECK-NEXT: }
    %p = arith.cmpf ogt, %w, %zero : f32
    %s = scf.if %p -> f32 {
      scf.yield %w : f32
    } else {
      scf.yield %r#1 : f32
    }
    // CHECK-NEXT: [[F:arg0]][0] = [[S]];
    memref.store %s, %f[%c0] : memref<16xf32>
    // CHECK-NEXT: int [[T:thread_id_x]] = threadIdx.x;
    // CHECK-NEXT: float [[K:v[0-9]+]];
    // CHECK-NEXT: switch ([[T]]) {
    // CHECK-NEXT: case 1: {
    // CHECK-NEXT: [[K]] = [[R]];
    // CHECK-NEXT: break;
    // CHECK-NEXT: }
    // CHECK-NEXT: case 3: {
    // CHECK-NEXT: [[K]] = [[Y]];
    // CHECK-NEXT: break;
    // CHECK-NEXT: }
    // CHECK-NEXT: default: {
    // CHECK-NEXT: [[K]] = 0.0f;
    // CHECK-NEXT: }
    // CHECK-NEXT: }
    // CHECK-NEXT: [[F]][1] = [[K]];
    %t = gpu.thread_id x
    %k = scf.index_switch %t -> f32
    case 1 {
      scf.yield %w : f32
    }
    case 3 {
      scf.yield %r#1 : f32
    }
    default {
      scf.yield %zero : f32
    }
    memref.store %k, %f[%c1] : memref<16xf32>
    gpu.return
  }
}

// Vectors: aligned accesses move whole vectors, under-aligned ones move
// elements; LLVM structs are arrays; inline assembly renumbers its operands
// as CUDA does, tied inputs becoming "+" outputs.
// CHECK-LABEL: // k_vector
gpu.module @vectors attributes {dlti.dl_spec = #dlti.dl_spec<index = 32 : i64>} {
  gpu.func @k_vector(%f: memref<16xf32>, %h: memref<8xf16>) kernel {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c7_i32 = arith.constant 7 : i32
    // CHECK: fusec_vec<float, 4> [[V:v[0-9]+]] = *(const fusec_vec<float, 4>*)([[F:arg0]] + 4);
    %v = vector.load %f[%c4] {alignment = 16 : i64} : memref<16xf32>, vector<4xf32>
    // CHECK-NEXT: fusec_vec<float, 2> [[W:v[0-9]+]] = {{[{][{]}}[[F]][0 + 0], [[F]][0 + 1]{{[}][}]}};
    %w = vector.load %f[%c0] : memref<16xf32>, vector<2xf32>
    // CHECK-NEXT: fusec_vec<float, 4> [[S:v[0-9]+]];
    // CHECK-NEXT: [[S]].v[0] = __fadd_rn([[V]].v[0], [[V]].v[0]);
    // CHECK: [[S]].v[3] = __fadd_rn([[V]].v[3], [[V]].v[3]);
    %s = arith.addf %v, %v : vector<4xf32>
    // CHECK-NEXT: float [[E:v[0-9]+]] = [[W]].v[1];
    // CHECK-NEXT: fusec_vec<float, 4> [[I:v[0-9]+]] = [[S]];
    // CHECK-NEXT: [[I]].v[2] = [[E]];
    %e = vector.extract %w[1] : f32 from vector<2xf32>
    %i = vector.insert %e, %s [2] : f32 into vector<4xf32>
    // CHECK: *(fusec_vec<float, 4>*)([[F]] + 4) = [[I]];
    vector.store %i, %f[%c4] {alignment = 16 : i64} : memref<16xf32>, vector<4xf32>
    // CHECK-NEXT: fusec_vec<fusec_half, 2> [[HV:v[0-9]+]] = *(const fusec_vec<fusec_half, 2>*)(arg1);
    %hv = vector.load %h[%c0] {alignment = 4 : i64} : memref<8xf16>, vector<2xf16>
    // CHECK-NEXT: fusec_vec<int, 1> [[BITS:v[0-9]+]] = fusec_bitcast<fusec_vec<int, 1>>([[HV]]);
    %bits = vector.bitcast %hv : vector<2xf16> to vector<1xi32>
    // CHECK-NEXT: int [[B:v[0-9]+]] = [[BITS]].v[0];
    %b = vector.extract %bits[0] : i32 from vector<1xi32>
    // CHECK-NEXT: fusec_array<float, 2> [[Z:v[0-9]+]] = {};
    %z = llvm.mlir.zero : !llvm.struct<(f32, f32)>
    // CHECK-NEXT: float [[Z0:v[0-9]+]] = [[Z]].v[0];
    // CHECK-NEXT: fusec_array<float, 2> [[O:v[0-9]+]];
    // CHECK-NEXT: [[O]].v[0] = [[Z0]];
    // CHECK-NEXT: asm volatile("add.s32 %0, %0, %3; // $0 %%r %1"
    // CHECK-NEXT: : "+f"([[O]].v[0]), "=f"([[O]].v[1])
    // CHECK-NEXT: : "r"([[B]]), "n"(7)
    // CHECK-NEXT: : "memory");
    %z0 = llvm.extractvalue %z[0] : !llvm.struct<(f32, f32)>
    %o = llvm.inline_asm has_side_effects "add.s32 $2, $2, $4; // $$0 %r $1", "=f,=f,0,r,n" %z0, %b, %c7_i32 : (f32, i32, i32) -> !llvm.struct<(f32, f32)>
    // CHECK-NEXT: float {{v[0-9]+}} = [[O]].v[1];
    %o1 = llvm.extractvalue %o[1] : !llvm.struct<(f32, f32)>
    gpu.return
  }
}

// A module without an index entry: MLIR's default width, 64 bits, which the
// PTX backend lowers index to as well.
// CHECK-LABEL: // k_wide
// CHECK-NEXT: extern "C" __global__ void k_wide(float* [[F:arg0]]) {
gpu.module @wide {
  gpu.func @k_wide(%f: memref<3000000000xf32>) kernel {
    %c3 = arith.constant 3 : index
    %cm1 = arith.constant -1 : index
    %big = arith.constant 2999999999 : index
    // CHECK: long long [[T:thread_id_x]] = threadIdx.x;
    %t = gpu.thread_id x
    // CHECK-NEXT: long long [[Q:v[0-9]+]] = (unsigned long long)[[T]] / 3ull;
    %q = arith.divui %t, %c3 : index
    // CHECK-NEXT: bool {{v[0-9]+}} = (unsigned long long)[[Q]] < 18446744073709551615ull;
    %u = arith.cmpi ult, %q, %cm1 : index
    // CHECK-NEXT: long long [[I:v[0-9]+]] = [[T]] + 2999999999ll;
    %i = arith.addi %t, %big : index
    // CHECK-NEXT: float {{v[0-9]+}} = [[F]][[[I]]];
    %v = memref.load %f[%i] : memref<3000000000xf32>
    gpu.return
  }
}

// The attention backward's (AttentionGradWgmma.cpp) fence before wgmma and
// TMA read what threads wrote, and its bulk-group waits.
// CHECK-LABEL: // k_bulk
// CHECK: asm volatile("fence.proxy.async.shared::cta;" : : : "memory");
// CHECK-NEXT: asm volatile("cp.async.bulk.commit_group;" : : : "memory");
// CHECK-NEXT: asm volatile("cp.async.bulk.wait_group.read 0;" : : : "memory");
// CHECK-NEXT: asm volatile("cp.async.bulk.wait_group 1;" : : : "memory");
// Its deterministic dQ's counters: bulk reductions, then GPU-scope fences
// around relaxed atomics (an add, and an add of 0 that a spin reads).
// CHECK-NEXT: asm volatile("fence.proxy.async.global;" : : : "memory");
// CHECK-NEXT: asm volatile("membar.gl;" : : : "memory");
// CHECK-NEXT: atomicAdd(&arg0[1], 1);
// CHECK-NEXT: int [[SEEN:v[0-9]+]] = atomicAdd(&arg0[1], 0);
// CHECK-NEXT: float v{{[0-9]+}} = (float)[[SEEN]];
// CHECK-NEXT: atomicAdd(&arg1[1], 2.5f);
// CHECK-NEXT: __syncwarp(-1);
gpu.module @bulk {
  gpu.func @k_bulk(%c: memref<4xi32>, %f: memref<2xf32>) kernel {
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
    nvvm.cp.async.bulk.commit.group
    nvvm.cp.async.bulk.wait_group 0 {read}
    nvvm.cp.async.bulk.wait_group 1
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
    nvvm.memory.barrier #nvvm.mem_scope<gpu>
    %i = arith.constant 1 : index
    %one = arith.constant 1 : i32
    %zero = arith.constant 0 : i32
    %unused = memref.atomic_rmw addi %one, %c[%i] : (i32, memref<4xi32>) -> i32
    %seen = memref.atomic_rmw addi %zero, %c[%i] : (i32, memref<4xi32>) -> i32
    %sf = arith.sitofp %seen : i32 to f32
    %x = arith.constant 2.5 : f32
    %unused_f = memref.atomic_rmw addf %x, %f[%i] : (f32, memref<2xf32>) -> f32
    %all = arith.constant -1 : i32
    nvvm.bar.warp.sync %all : i32
    gpu.return
  }
}
