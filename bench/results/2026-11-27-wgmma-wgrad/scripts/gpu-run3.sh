#!/usr/bin/env bash
# Run 3 (3deb369's compiler, a9ee6d0's kernels): ncu on the rows still
# below their bars: the c2 n256 data gradient (two blocks an SM) and the
# c4 n32 / c2 n256 filter gradients (split mainloop + reduction).
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
for f in $S/tiles/ncu/*.ptx; do
  b=$(basename $f .ptx)
  timeout 150 ncu --clock-control none -k regex:k0 -c 3 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    $S/fusec-runner "$f" --repeat=1 --warmup=1 > "$out/ncu-$b.txt" 2>&1
  echo "== $b rc=$?"
  grep -E "^  k0|Duration|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Block Limit (Registers|Shared)|Stall|Warp Cycles Per Issued" "$out/ncu-$b.txt" | head -40
done
