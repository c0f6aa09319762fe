#!/usr/bin/env bash
# Issue 47's and 53's serving figures in one run, for a quiet machine (nothing else running):
#   1. the flood rows (bench/rows.py: 1, 2, 3, 8, 11, 12) against the public-mode app, model calls in the app's
#      process (VITVIZ_WORKERS=off) and then in worker processes (processes): the well-behaved visitor's p95
#      beside each attack against its p95 alone, and its errors;
#   2. the served app's memory per 300 fresh sessions up to 1,500 (bench/session_memory.py --served; public mode,
#      so with its default worker processes);
#   3. visitors per minute at p95 <= 2x alone: one replica, two behind nginx, one on Ray actors (bench/replicas.py).
# Prints Markdown tables (and keeps the raw reports in OUT, default /tmp/vitviz-quiet-run), with the load average
# at each start and end. About 12 minutes on a quiet 2-core machine; set SHORT=1 for a quicker, rougher run.
#
#   bash bench/quiet_run.sh [OUT]
set -u
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/vitviz-quiet-run}
mkdir -p "$OUT"
PORT=${VITVIZ_BENCH_PORT:-7321}
if [ "${SHORT:-0}" = 1 ]; then CALLS=4; SECONDS_ROW=6; SESSIONS=600; STEP_S=40; REPLICA_S=5
else CALLS=6; SECONDS_ROW=8; SESSIONS=1500; STEP_S=60; REPLICA_S=6; fi
start=$(date +%s)
echo "quiet run: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, into $OUT"

echo "== 1. flood rows, VITVIZ_WORKERS=off then processes ($(date -u +%T))"
python bench/load.py --rows --only 1,2,3,8,11,12 --calls "$CALLS" --seconds "$SECONDS_ROW" --port "$PORT" \
    --env VITVIZ_WORKERS=off --then-env VITVIZ_WORKERS=processes > "$OUT/rows.json" 2> "$OUT/rows.log"
echo "   rows: exit $?, $(( $(date +%s) - start )) s so far"

echo "== 2. memory per fresh sessions ($(date -u +%T))"
python bench/session_memory.py --served --sessions "$SESSIONS" --step 300 --step-seconds "$STEP_S" \
    --port "$((PORT + 1))" > "$OUT/sessions.json" 2> "$OUT/sessions.log"
echo "   sessions: exit $?, $(( $(date +%s) - start )) s so far"

echo "== 3. replicas ($(date -u +%T))"
# REPLICAS=-Ray leaves the Ray arrangement out (a local Ray takes about 3 GB more memory)
VITVIZ_BENCH_SECONDS=$REPLICA_S python bench/replicas.py ${REPLICAS:-} > "$OUT/replicas.md" 2> "$OUT/replicas.log"
echo "   replicas: exit $?, $(( $(date +%s) - start )) s in all"

python - "$OUT" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])


def reports(text: str) -> list:
    found, at, decoder = [], 0, json.JSONDecoder()
    while True:
        at = text.find("{", at)
        if at < 0:
            return found
        value, at = decoder.raw_decode(text, at)
        found.append(value)


apps = reports((out / "rows.json").read_text()) if (out / "rows.json").exists() else []
print("\n### Flood rows: the well-behaved visitor's p95 beside each attack / its p95 alone (goal <= 2x, no errors)\n")
names = ["off", "processes"][:len(apps)]
print("| row | " + " | ".join(f"VITVIZ_WORKERS={n}: p95 s (ratio), errors" for n in names) + " |")
print("|---|" + "---|" * len(names))
alone = [a.get("alone", {}) for a in apps]
print("| alone | " + " | ".join(f"{a.get('p95_s')} (1.0), {a.get('errors')}" for a in alone) + " |")
for row in (apps[0].get("latency_rows", {}) if apps else {}):
    cells = []
    for a, base in zip(apps, alone):
        r = a.get("latency_rows", {}).get(row, {})
        ratio = (r.get("p95_s") or 0) / base["p95_s"] if base.get("p95_s") and r.get("p95_s") else float("nan")
        cells.append(f"{r.get('p95_s')} ({ratio:.1f}x), {r.get('errors')}" + (f" {r.get('first_errors')}" if r.get("errors") else ""))
    print(f"| {row} | " + " | ".join(cells) + " |")
for n, a in zip(names, apps):
    print(f"\n{n}: load average {a.get('loadavg_start')} -> {a.get('loadavg_end')}, {a.get('wall_s')} s"
          + (f", ERROR {a['error']}" if "error" in a else ""))

s = reports((out / "sessions.json").read_text()) if (out / "sessions.json").exists() else []
if s:
    s = s[0]
    print("\n### The served app's memory as fresh sessions arrive (goal <= 100 MB per 300, flat from 300 to 1,500)\n")
    print(f"warm: {s.get('warm_rss_mb')} MB (with workers {s.get('warm_rss_with_workers_mb')} MB)\n")
    print("| sessions | RSS (MB) | growth this step (MB) | errors |")
    print("|---|---|---|---|")
    for st in s.get("steps", []):
        print(f"| {st['sessions']} | {st['rss_mb']} | {st['growth_mb']} | {st['errors']} |")
    print(f"\nfirst 300: +{s.get('first_step_growth_mb')} MB; after them to the last step: "
          f"+{s.get('growth_after_first_step_mb')} MB; load average {s.get('loadavg_start')} -> {s.get('loadavg_end')}")

print("\n### Replicas\n")
print((out / "replicas.md").read_text() if (out / "replicas.md").exists() else "(no table: see replicas.log)")
EOF
echo "quiet run done: $(( $(date +%s) - start )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
