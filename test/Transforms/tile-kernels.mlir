// RUN: fusec-opt %s --fusec-pipeline-tiled -split-input-file 2>/dev/null | FileCheck %s --enable-var-scope

// A wide f32 convolution becomes a shared-memory GEMM on CUDA cores: two
// buffers per operand tile, a barrier per reduction step, the fused batch
// norm and relu applied before the store (tile-kernels-mma.mlir has the
// tensor-core family). The plan writes the result straight into the output and
// copies the input that is also returned.
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %[[X:[a-z0-9]+]]: memref<1x9x9x3xf32>, %[[W:[a-z0-9]+]]: memref<32x3x3x3xf32>, %[[M:[a-z0-9]+]]: memref<32xf32>, %[[OUT0:[a-z0-9]+]]: memref<1x7x7x32xf32>, %[[OUT1:[a-z0-9]+]]: memref<1x9x9x3xf32>)
// CHECK-SAME: attributes {fusec.num_inputs = 3 : i64}
// CHECK: %[[SMEM:.+]] = arith.constant 16384 : i32
// CHECK: gpu.launch_func @conv_kernels::@k0_conv2d blocks in (%[[C1:.+]], %[[C1]], %[[C1]]) threads in (%[[C256:.+]], %[[C1]], %[[C1]]) dynamic_shared_memory_size %[[SMEM]] args(%[[X]] : {{.+}}, %[[W]] : {{.+}}, %[[M]] : {{.+}}, %[[OUT0]] : memref<1x7x7x32xf32>)
// CHECK: memref.copy %[[X]], %[[OUT1]]
// CHECK: gpu.module @conv_kernels
// CHECK: gpu.func @k0_conv2d({{.+}}) kernel attributes {fusec.family = "gemm_simt", fusec.tile = #fuse.tile<bm = 64, bn = 64, bk = 16, tm = 4, tn = 4>, known_block_size = array<i32: 256, 1, 1>}
// CHECK: %[[SHARED:.+]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x16x64xf32, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%{{.+}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2x16x64xf32, #gpu.address_space<workgroup>>
// CHECK: gpu.barrier
// CHECK: scf.for {{.+}} iter_args(
// CHECK-COUNT-16: math.fma
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK: math.rsqrt
// CHECK: math.fma
// CHECK: arith.maximumf
// CHECK: memref.store {{.+}} : memref<1x7x7x32xf32>
func.func @conv(%x: tensor<1x9x9x3xf32>, %w: tensor<32x3x3x3xf32>, %m: tensor<32xf32>)
    -> (tensor<1x7x7x32xf32>, tensor<1x9x9x3xf32>) {
  %0 = fuse.conv2d %x, %w : tensor<1x9x9x3xf32>, tensor<32x3x3x3xf32>
  %1 = fuse.batch_norm %0, %m, %m, %m, %m : tensor<1x7x7x32xf32>, tensor<32xf32>
  %2 = fuse.relu %1 : tensor<1x7x7x32xf32>
  return %2, %x : tensor<1x7x7x32xf32>, tensor<1x9x9x3xf32>
}

// -----

// Depthwise: one thread per output, the 3x3 window unrolled; intermediates
// between kernels get buffers; a reshape is a view.
// CHECK-LABEL: func.func @depthwise(
// CHECK: %[[T:.+]] = memref.alloc() : memref<1x5x5x8xf32>
// CHECK: gpu.launch_func @depthwise_kernels::@k0_conv2d blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in
// CHECK-SAME: args({{.+}}, %[[T]] : memref<1x5x5x8xf32>)
// CHECK: %[[V:.+]] = memref.reinterpret_cast %[[T]] to offset: [0], sizes: [1, 200], strides: [200, 1]
// CHECK: gpu.launch_func @depthwise_kernels::@k1_softmax {{.+}} args(%[[V]] : memref<1x200xf32>, %{{.+}} : memref<1x200xf32>)
// CHECK: gpu.func @k0_conv2d
// CHECK-NOT: gpu.dynamic_shared_memory
// CHECK-COUNT-9: math.fma
// CHECK: gpu.func @k1_softmax(
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.view {{.+}} to memref<8xf32, #gpu.address_space<workgroup>>
// CHECK: math.exp
func.func @depthwise(%x: tensor<1x5x5x8xf32>, %w: tensor<8x3x3x1xf32>) -> tensor<1x200xf32> {
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1>, groups = 8} : tensor<1x5x5x8xf32>, tensor<8x3x3x1xf32>
  %1 = fuse.reshape %0 : tensor<1x5x5x8xf32> to tensor<1x200xf32>
  %2 = fuse.softmax %1 : tensor<1x200xf32>
  return %2 : tensor<1x200xf32>
}

// -----

// A large problem takes a bigger tile; each thread reads its register runs
// from shared memory as aligned 16-byte vectors.
// CHECK-LABEL: func.func @big(
// CHECK: gpu.launch_func @big_kernels::@k0_conv2d blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%[[C256:.+]], %{{.+}}, %{{.+}})
// CHECK: gpu.func @k0_conv2d({{.+}}) kernel attributes {fusec.family = "gemm_simt", fusec.tile = #fuse.tile<bm = 128, bn = 64, bk = 16, tm = 8, tn = 4>, known_block_size = array<i32: 256, 1, 1>}
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<2x16x128xf32, #gpu.address_space<workgroup>>, vector<4xf32>
func.func @big(%x: tensor<32x28x28x64xf32>, %w: tensor<64x3x3x64xf32>) -> tensor<32x28x28x64xf32> {
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1>} : tensor<32x28x28x64xf32>, tensor<64x3x3x64xf32>
  return %0 : tensor<32x28x28x64xf32>
}

// -----

// Elementwise kernels move full-size tensors as 16-byte vectors when the
// innermost extent allows (8 bf16 per thread here). With per-channel
// operands on the innermost axis a thread keeps its 8 channels, computes
// their batch-norm coefficients (an rsqrt each) once, and walks 4 rows (40
// rows: no bounds check).
// CHECK-LABEL: func.func @bn_relu(
// CHECK: gpu.func @k0_relu
// CHECK-COUNT-8: math.rsqrt
// CHECK-NOT: math.rsqrt
// CHECK-NOT: scf.if
// CHECK-COUNT-4: vector.store %{{.+}} {alignment = 16 : i64} : memref<2x5x4x16xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store
func.func @bn_relu(%x: tensor<2x5x4x16xbf16>, %m: tensor<16xbf16>) -> tensor<2x5x4x16xbf16> {
  %0 = fuse.batch_norm %x, %m, %m, %m, %m : tensor<2x5x4x16xbf16>, tensor<16xbf16>
  %1 = fuse.relu %0 : tensor<2x5x4x16xbf16>
  return %1 : tensor<2x5x4x16xbf16>
}

// -----

// NHWC depthwise with channels in vectors: a thread computes 8 bf16
// channels of 4 neighbouring pixels (9 output columns: the last block's
// extra pixels are not stored), loading the 3 x 6 input vectors they share
// once: 18 loads and 4 stores instead of 36 and 4.
// CHECK-LABEL: func.func @dw_vector(
// CHECK: gpu.func @k0_conv2d
// CHECK-NOT: gpu.dynamic_shared_memory
// CHECK-COUNT-18: vector.load %{{.+}} {alignment = 16 : i64} : memref<1x9x9x32xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK: vector.store %{{.+}} {alignment = 16 : i64} : memref<1x9x9x32xbf16>, vector<8xbf16>
// CHECK-COUNT-3: scf.if
// CHECK: vector.store
// CHECK-NOT: vector.store
func.func @dw_vector(%x: tensor<1x9x9x32xbf16>, %w: tensor<32x3x3x1xbf16>) -> tensor<1x9x9x32xbf16> {
  %0 = fuse.conv2d %x, %w {padding = array<i64: 1, 1>, groups = 32} : tensor<1x9x9x32xbf16>, tensor<32x3x3x1xbf16>
  %1 = fuse.relu6 %0 : tensor<1x9x9x32xbf16>
  return %1 : tensor<1x9x9x32xbf16>
}

// -----

// A row of 4096 bf16 is 2 vectors per thread of a 256-thread block: it is
// read once into registers (no loop over the row), each reduction shuffles
// within warps and combines the 8 warps' partials through shared memory
// (two barriers); the residual sum is written beside the normalised row.
// CHECK-LABEL: func.func @resident_row(
// CHECK: gpu.func @k0_layer_norm
// CHECK-NOT: scf.for
// CHECK-COUNT-2: vector.load %{{.+}} : memref<3x4096xbf16>, vector<8xbf16>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: scf.for
// CHECK: gpu.return
func.func @resident_row(%x: tensor<3x4096xbf16>, %r: tensor<3x4096xbf16>) -> (tensor<3x4096xbf16>, tensor<3x4096xbf16>) {
  %h = fuse.add %x, %r : tensor<3x4096xbf16>, tensor<3x4096xbf16>
  %0 = fuse.layer_norm %h : tensor<3x4096xbf16>
  return %0, %h : tensor<3x4096xbf16>, tensor<3x4096xbf16>
}

// -----

// A row of 768 f32 is 192 vectors: 6 a lane of one warp, 8 rows a block
// (37 rows: 5 blocks, the last block's surplus warps computing row 36 again
// and storing nothing). Shuffles alone reduce it: no barrier, no shared
// memory.
// CHECK-LABEL: func.func @warp_row(
// CHECK: gpu.launch_func @warp_row_kernels::@k0_layer_norm blocks in (%c5, %c1{{.*}}, %c1{{.*}}) threads in (%c256,
// CHECK-NOT: dynamic_shared_memory_size
// CHECK: gpu.func @k0_layer_norm
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-6: vector.load %{{.+}} : memref<37x768xf32>, vector<4xf32>
// CHECK-COUNT-10: gpu.shuffle xor
// CHECK: scf.if
// CHECK-COUNT-6: vector.store %{{.+}} : memref<37x768xf32>, vector<4xf32>
// CHECK-NOT: gpu.barrier
// CHECK: gpu.return
func.func @warp_row(%x: tensor<37x768xf32>, %w: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<37x768xf32> {
  %0 = fuse.layer_norm %x scale(%w : tensor<768xf32>) shift(%b : tensor<768xf32>) : tensor<37x768xf32>
  return %0 : tensor<37x768xf32>
}

// -----

// Rows of 65537 bf16: no vector divides them, so each row splits at its
// first 16-byte boundary (a head of (8 - offset % 8) % 8 elements, then
// vectors, then a tail). 1024 threads take 4 vectors per chunk, 2 chunks;
// the first pass stages the row in shared memory (128 KiB) while it sums,
// the second reads it back from there: the row leaves memory once.
// CHECK-LABEL: func.func @streamed_row(
// CHECK: gpu.launch_func @streamed_row_kernels::@k0_layer_norm blocks in (%{{.+}}, %{{.+}}, %{{.+}}) threads in (%c1024,
// CHECK-SAME: dynamic_shared_memory_size %c131200_i32
// CHECK: gpu.func @k0_layer_norm
// CHECK: memref.view {{.+}} to memref<8192x8xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[OFF:.+]] = arith.remui %{{.+}}, %c8
// CHECK: %[[PAST:.+]] = arith.subi %c8, %[[OFF]]
// CHECK: arith.remui %[[PAST]], %c8
// CHECK: scf.for
// CHECK-COUNT-4: vector.load %{{.+}} {alignment = 16 : i64} : memref<2x65537xbf16>, vector<8xbf16>
// CHECK-COUNT-4: vector.store %{{.+}} {alignment = 16 : i64} : memref<8192x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK-NOT: memref<2x65537xbf16>, vector<8xbf16>
// CHECK-COUNT-4: vector.load %{{.+}} : memref<8192x8xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// The scale too moves as aligned vectors: lanes [head, head + 8) of two of
// them, picked by a switch on the block's head.
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<65537xbf16>, vector<8xbf16>
// CHECK: vector.load %{{.+}} {alignment = 16 : i64} : memref<65537xbf16>, vector<8xbf16>
// CHECK: scf.index_switch %{{.+}} -> f32, f32, f32, f32, f32, f32, f32, f32
// CHECK: case 7
// CHECK: vector.store %{{.+}} : memref<2x65537xbf16>, vector<8xbf16>
func.func @streamed_row(%x: tensor<2x65537xbf16>, %w: tensor<65537xbf16>) -> tensor<2x65537xbf16> {
  %0 = fuse.layer_norm %x scale(%w : tensor<65537xbf16>) : tensor<2x65537xbf16>
  return %0 : tensor<2x65537xbf16>
}

// -----

// f32 rows of 33333 with a residual add: both inputs would need 260 KiB of
// shared memory, so the second pass reads them again; softmax's statistics
// take one pass (a running maximum rescales the running sum).
// CHECK-LABEL: func.func @streamed_softmax(
// CHECK: gpu.func @k0_softmax
// CHECK-NOT: memref<{{[0-9]+}}x4xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %{{.+}} : memref<3x33333xf32>, vector<4xf32>
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: scf.yield
// CHECK: gpu.shuffle xor
// CHECK: scf.for
// CHECK-COUNT-8: vector.load %{{.+}} : memref<3x33333xf32>, vector<4xf32>
// CHECK-COUNT-2: vector.store %{{.+}} : memref<3x33333xf32>, vector<4xf32>
func.func @streamed_softmax(%x: tensor<3x33333xf32>, %r: tensor<3x33333xf32>) -> (tensor<3x33333xf32>, tensor<3x33333xf32>) {
  %h = fuse.add %x, %r : tensor<3x33333xf32>, tensor<3x33333xf32>
  %0 = fuse.softmax %h : tensor<3x33333xf32>
  return %0, %h : tensor<3x33333xf32>, tensor<3x33333xf32>
}

// -----

// NHWC pooling and resampling move a 16-byte vector of channels per
// thread: one window of index math for 8 bf16 channels. A bilinear 2x
// upsample takes a thread per input pixel: its 3 x 3 neighbourhood makes
// the 2 x 2 outputs (9 loads, 4 stores).
// CHECK-LABEL: func.func @pool_resample_vector(
// CHECK: gpu.func @k0_max_pool2d
// CHECK-COUNT-9: vector.load %{{.+}} : memref<1x9x9x16xbf16>, vector<8xbf16>
// CHECK: vector.store %{{.+}} : memref<1x5x5x16xbf16>, vector<8xbf16>
// CHECK: gpu.func @k1_upsample
// CHECK-COUNT-9: vector.load %{{.+}} : memref<1x9x9x16xbf16>, vector<8xbf16>
// CHECK-NOT: vector.load
// CHECK-COUNT-4: vector.store %{{.+}} : memref<1x18x18x16xbf16>, vector<8xbf16>
// CHECK-NOT: vector.store
func.func @pool_resample_vector(%x: tensor<1x9x9x16xbf16>) -> (tensor<1x5x5x16xbf16>, tensor<1x18x18x16xbf16>) {
  %0 = fuse.max_pool2d %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<1x9x9x16xbf16>
  %1 = fuse.upsample %x {mode = #fuse.upsample_mode<bilinear>, scale = array<f64: 2.0, 2.0>} : tensor<1x9x9x16xbf16>
  return %0, %1 : tensor<1x5x5x16xbf16>, tensor<1x18x18x16xbf16>
}

// -----

// Gather family: a half-split rope moves 16-byte vectors (the input, its
// partner half and the cos/sin tables, one load each); a transpose that
// moves the innermost axis goes through a padded shared-memory tile, read
// along the input's rows and written along the output's.
// CHECK-LABEL: func.func @gather(
// CHECK: gpu.func @k0_rope({{.+}}) kernel attributes {fusec.family = "gather"
// CHECK-COUNT-2: vector.load %arg0{{.+}} {alignment = 16 : i64} : memref<2x3x7x32xbf16>, vector<8xbf16>
// CHECK: vector.load %arg1{{.+}} : memref<7x16xbf16>, vector<8xbf16>
// CHECK: vector.load %arg2{{.+}} : memref<7x16xbf16>, vector<8xbf16>
// CHECK: vector.store {{.+}}, %arg3{{.+}} {alignment = 16 : i64} : memref<2x3x7x32xbf16>, vector<8xbf16>
// CHECK: gpu.func @k1_transpose({{.+}}) kernel attributes {fusec.family = "gather"
// CHECK: %[[TILE:.+]] = memref.view {{.+}} to memref<64x65xf32, #gpu.address_space<workgroup>>
// CHECK: %[[V:.+]] = memref.load %arg0[%{{.+}}, %[[ROW:.+]], %[[COL:.+]]] : memref<3x37x45xf16>
// CHECK: memref.store {{.+}}, %[[TILE]][%[[ROW]], %[[COL]]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[TILE]][%[[COL]], %[[ROW]]]
// CHECK: memref.store {{.+}}, %arg1[%{{.+}}, %[[ROW]], %[[COL]]] : memref<3x45x37xf16>
func.func @gather(%x: tensor<2x3x7x32xbf16>, %c: tensor<7x16xbf16>, %s: tensor<7x16xbf16>,
                  %y: tensor<3x37x45xf16>) -> (tensor<2x3x7x32xbf16>, tensor<3x45x37xf16>) {
  %0 = fuse.rope %x, %c, %s : tensor<2x3x7x32xbf16>, tensor<7x16xbf16>
  %1 = fuse.transpose %y {permutation = array<i64: 0, 2, 1>} : tensor<3x37x45xf16>
  return %0, %1 : tensor<2x3x7x32xbf16>, tensor<3x45x37xf16>
}

// -----

// A transpose whose tile would be mostly padding (NCHW's 3-channel image to
// NHWC: 3 of a 64-wide tile's columns; a filter's 3 x 3 taps moved before
// its channels) runs one thread per output element, with no shared tile.
// CHECK-LABEL: func.func @narrow_transposes(
// CHECK: gpu.func @k0_transpose({{.+}}) kernel attributes {fusec.family = "gather"
// CHECK-NOT: memref.view
// CHECK-NOT: gpu.barrier
// CHECK: memref.load %arg0{{.+}} : memref<2x3x40x40xbf16>
// CHECK: memref.store {{.+}} : memref<2x40x40x3xbf16>
// CHECK: gpu.func @k1_transpose({{.+}}) kernel attributes {fusec.family = "gather"
// CHECK-NOT: gpu.barrier
// CHECK: memref.store {{.+}} : memref<64x3x3x96xbf16>
// CHECK: gpu.return
func.func @narrow_transposes(%x: tensor<2x3x40x40xbf16>, %w: tensor<64x96x3x3xbf16>)
    -> (tensor<2x40x40x3xbf16>, tensor<64x3x3x96xbf16>) {
  %0 = fuse.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x40x40xbf16>
  %1 = fuse.transpose %w {permutation = array<i64: 0, 2, 3, 1>} : tensor<64x96x3x3xbf16>
  return %0, %1 : tensor<2x40x40x3xbf16>, tensor<64x3x3x96xbf16>
}


// -----

// f32 attention (one thread per output) reads rope tables sliced for a
// position offset in place, at row pos + offset (this once crashed).
// CHECK-LABEL: func.func @direct_rope_offset(
// CHECK: gpu.func @k0_attention(
// CHECK-SAME: %[[C:[a-z0-9]+]]: memref<40x8xf32>, %[[S:[a-z0-9]+]]: memref<40x8xf32>
// CHECK-SAME: fusec.family = "attention_direct"
// CHECK: %[[OFF:.+]] = arith.constant 31 : index
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[OFF]] : index
// CHECK-NEXT: memref.load %[[C]][%[[ROW]], %{{.+}}] : memref<40x8xf32>
// CHECK-NEXT: memref.load %[[S]][%[[ROW]], %{{.+}}] : memref<40x8xf32>
func.func @direct_rope_offset(%q: tensor<1x2x6x16xf32>, %c: tensor<40x8xf32>, %s: tensor<40x8xf32>) -> tensor<1x2x6x16xf32> {
  %0 = fuse.kernel "k0_attention"(%q, %c, %s) : (tensor<1x2x6x16xf32>, tensor<40x8xf32>, tensor<40x8xf32>) -> tensor<1x2x6x16xf32> {
  ^bb0(%a: tensor<1x2x6x16xf32>, %cc: tensor<40x8xf32>, %ss: tensor<40x8xf32>):
    %c6 = fuse.slice %cc {offsets = array<i64: 31, 0>, sizes = array<i64: 6, 8>} : tensor<40x8xf32>
    %s6 = fuse.slice %ss {offsets = array<i64: 31, 0>, sizes = array<i64: 6, 8>} : tensor<40x8xf32>
    %1 = fuse.rope %a, %c6, %s6 : tensor<1x2x6x16xf32>, tensor<6x8xf32>
    %3 = fuse.attention %1, %1, %a : tensor<1x2x6x16xf32>, tensor<1x2x6x16xf32>, tensor<1x2x6x16xf32>
    fuse.yield %3 : tensor<1x2x6x16xf32>
  }
  return %0 : tensor<1x2x6x16xf32>
}

// -----

// An upcast after an f16 product joins its epilogue, which rounds each value
// to f16 first, as the graph does (past 65504 it is inf), then stores f32.
// CHECK-LABEL: func.func @cast_rounds(
// CHECK: gpu.func @k0_linear
// CHECK: %[[H:.+]] = arith.truncf %{{.+}} : f32 to f16
// CHECK-NEXT: arith.extf %[[H]] : f16 to f32
// CHECK: vector.store %{{.+}} : memref<64x48xf32>, vector<8xf32>
func.func @cast_rounds(%x: tensor<64x32xf16>, %w: tensor<48x32xf16>) -> tensor<64x48xf32> {
  %0 = fuse.linear %x, %w : tensor<64x32xf16>, tensor<48x32xf16>
  %1 = fuse.cast %0 : tensor<64x48xf16> to tensor<64x48xf32>
  return %1 : tensor<64x48xf32>
}
