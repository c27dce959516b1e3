#!/usr/bin/env bash
# Run 8: the split-K wgrad's 64x64 tile at other depths and stage counts (b387032's fusec).
for f in .gpu/tiles2/*.ptx; do
  printf "%-32s %s " "$f" "$(grep -o '"grid":\[[^]]*\]' $f | head -1)"; .gpu/fusec-runner "$f" --repeat=50 --warmup=5 2>&1 | grep -i "time_ms" | tail -1
done
