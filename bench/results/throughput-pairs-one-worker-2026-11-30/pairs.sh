#!/usr/bin/env bash
# Alternated runs: one (B) and two (A) worker processes, same code, same web. Each starts under load 0.8.
set -u
cd /work/main
OUT=${OUT:-/work/brief/r63/pairs}
mkdir -p "$OUT"
quiet() { for _ in $(seq 120); do l=$(cut -d' ' -f1 /proc/loadavg); awk "BEGIN{exit !($l < 0.8)}" && return; sleep 10; done; }
i=0
for side in B A A B B A; do
  i=$((i+1))
  quiet
  if [ $side = B ]; then W="--workers load+extract+housekeeping:threads:46"; else W=""; fi
  echo "== run $i side $side load $(cat /proc/loadavg) $(date -u +%FT%TZ)" | tee -a "$OUT/log"
  .venv/bin/python -m bench.throughput --only ours --no-frontier --runs 1 --keep-web /tmp/tpweb $W --json "$OUT/run$i-$side.json" > "$OUT/run$i-$side.txt" 2>&1
  echo "   rc=$? load after $(cat /proc/loadavg)" | tee -a "$OUT/log"
done
