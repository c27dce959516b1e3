// RUN: fusec-translate --fusec-to-cuda %s --split-input-file --verify-diagnostics

// What the CUDA C printer cannot print fails at the op, never crashes.

gpu.module @m {
  gpu.func @k(%f: memref<4xf32>) kernel {
    %c0 = arith.constant 0 : index
    %a = memref.load %f[%c0] : memref<4xf32>
    // expected-error @+1 {{'math.atan' op is not known to the CUDA C printer}}
    %b = math.atan %a : f32
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @k(%f: memref<4xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1_i32 = arith.constant 1 : i32
    %c16_i32 = arith.constant 16 : i32
    %a = memref.load %f[%c0] : memref<4xf32>
    // expected-error @+1 {{'gpu.shuffle' op over other than a whole warp, or whose validity is used, has no CUDA C form}}
    %b, %valid = gpu.shuffle xor %a, %c1_i32, %c16_i32 : f32
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @k(%h: memref<4xf16>) kernel {
    %c0 = arith.constant 0 : index
    %a = memref.load %h[%c0] : memref<4xf16>
    // expected-error @+1 {{'arith.addf' op on 'f16' has no CUDA C form (fusec computes in f32)}}
    %b = arith.addf %a, %a : f16
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @k(%f: memref<4xf32, strided<[?]>>) kernel {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{'memref.load' op accesses 'memref<4xf32, strided<[?]>>', whose layout has no static strides}}
    %a = memref.load %f[%c0] : memref<4xf32, strided<[?]>>
    gpu.return
  }
}

// -----

gpu.module @m {
  // expected-error @+1 {{'gpu.func' op is not a kernel; the CUDA C printer prints kernels only}}
  gpu.func @helper(%f: memref<4xf32>) {
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @k(%f: memref<4xf32>) kernel {
    // expected-error @+1 {{'memref.extract_aligned_pointer_as_index' op of a buffer outside shared memory has no CUDA C form}}
    %p = memref.extract_aligned_pointer_as_index %f : memref<4xf32> -> index
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @k(%f: memref<4xf32>) kernel {
    %c0 = arith.constant 0 : index
    %a = memref.load %f[%c0] : memref<4xf32>
    // expected-error @+1 {{'llvm.inline_asm' op refers to operand $3, which it does not have}}
    %b = llvm.inline_asm "mov.f32 $0, $3;", "=f,f" %a : (f32) -> f32
    gpu.return
  }
}

// -----

gpu.module @m {
  gpu.func @k() kernel {
    // expected-error @+1 {{'nvvm.fence.proxy' op has no CUDA C form}}
    nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cluster>}
    gpu.return
  }
}
