#!/usr/bin/env bash
# Alternated runs of ours: the default (base) against the workers' glibc malloc held to two arenas (arena2).
# Each run starts once the 1-minute load is under 0.8 (at most 10 minutes of waiting).
cd "$(dirname "$0")/../../.."
out=bench/results/throughput-pairs-malloc-arena-2026-11-30
for side in base arena2 arena2 base base arena2; do
  for _ in $(seq 120); do awk '{exit !($1 < 0.8)}' /proc/loadavg && break; sleep 5; done
  n=$(ls $out/*.json 2>/dev/null | wc -l)
  echo "$(date -u +%FT%TZ) run $((n+1)) $side load $(cut -d' ' -f1-3 /proc/loadavg)" >> $out/pairs.log
  extra=(); [ $side = arena2 ] && extra=(--env MALLOC_ARENA_MAX=2)
  .venv/bin/python -m bench.throughput --only ours --no-frontier --runs 1 --keep-web /tmp/tpweb "${extra[@]}" \
    --json $out/run$((n+1))-$side.json > $out/run$((n+1))-$side.txt 2>&1
  echo "$(date -u +%FT%TZ) run $((n+1)) $side rc=$?" >> $out/pairs.log
done
