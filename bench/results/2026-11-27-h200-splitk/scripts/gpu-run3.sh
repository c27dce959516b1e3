#!/usr/bin/env bash
# Run 3: wgrad tile candidates (split-K by tile) timed by fusec-runner.
for f in .gpu/tiles/*.ptx; do
  printf "%-40s " "$f"; .gpu/fusec-runner "$f" --repeat=50 --warmup=5 2>&1 | grep -i -E " ms|time" | tail -1
done
