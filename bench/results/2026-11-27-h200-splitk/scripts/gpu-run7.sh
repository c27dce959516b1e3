#!/usr/bin/env bash
# Run 7: ncu of the dgrad and wgrad kernels on the rows that miss their bars (b387032).
set -u
S=.gpu; out=${OUT:-$S/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
for f in r50_c2_3x3_dgrad r50_c2_3x3_n256_dgrad r50_c4_3x3_wgrad r50_c2_3x3_n256_wgrad; do
  timeout 90 ncu --clock-control none -k regex:k0 -c 2 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats $S/fusec-runner $S/prof2/$f.ptx > "$out/ncu-$f.txt" 2>&1
done
grep -E "^  k0|Duration|Compute \(SM\) Throughput|Memory Throughput  +%|Achieved Occupancy|Registers Per|Block Size|Grid Size|Warp Cycles Per Issued|Est. Local Speedup|stalled waiting" "$out"/ncu-*.txt | cut -c1-160
