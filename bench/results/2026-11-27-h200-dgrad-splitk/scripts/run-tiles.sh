S=.gpu; nvidia-smi --query-gpu=name --format=csv,noheader
for f in $S/tiles2/*.ptx; do
  printf "%-32s " "$(basename $f .ptx)"; timeout 20 $S/fusec-runner "$f" --repeat=100 --warmup=10 2>&1 | grep -i -E "time_ms|error" | tail -1
done
