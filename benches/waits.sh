#!/usr/bin/env bash
# The wait strategies where programs run: 500 f64 echoed through the codec over a pipe, every
# wait (block, spin, hybrid, auto) measured interleaved within each run, at every placement
# (one core, two cores, the scheduler's choice) on a quiet machine, and unpinned beside 1 and
# 2 busy threads (--load). Prints, per run and setting, p50 and p99 of the round trip and the
# CPU time per round trip of client and server, then auto's p50 against block's and spin's.
#
#   bash benches/waits.sh [RUNS]        # default 3 runs of each setting; ~20 s a run
#
# The targets it checks (docs/PERFORMANCE.md, "Waiting where programs run"):
#   same (quiet and --load 1): auto p50 <= 1.3x block's
#   split (quiet):             auto p50 <= 1.3x spin's and <= 1.1x hybrid's
#   free (quiet):              auto p50 <= 1.3x spin's, p99 <= 2x spin's p99
#   free --load 1 and 2:       auto p50 <= block's, p99 <= 2x block's p99
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cargo build --release --quiet --bin peer
peer=target/release/peer
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

common=(--sizes 500 --dtype f64 --path codec --handler echo --wait block,spin,hybrid,auto)
settings=(
    "quiet|--pin same,split,free"
    "load1|--pin same,free --load 1"
    "load2|--pin free --load 2"
)
for run in $(seq 1 "$runs"); do
    for setting in "${settings[@]}"; do
        name=${setting%%|*}
        read -r -a flags <<<"${setting#*|}"
        "$peer" "${common[@]}" "${flags[@]}" --json "$out/$name-$run.json" >/dev/null
    done
done

python3 - "$out" "$runs" <<'EOF'
import json, sys
out, runs = sys.argv[1], int(sys.argv[2])
targets = {
    ("quiet", "same"): [("block", 1.3, "p50")],
    ("load1", "same"): [("block", 1.3, "p50")],
    ("quiet", "split"): [("spin", 1.3, "p50"), ("hybrid", 1.1, "p50")],
    ("quiet", "free"): [("spin", 1.3, "p50"), ("spin", 2.0, "p99")],
    ("load1", "free"): [("block", 1.0, "p50"), ("block", 2.0, "p99")],
    ("load2", "free"): [("block", 1.0, "p50"), ("block", 2.0, "p99")],
}
us = lambda ns: f"{ns / 1e3:8.1f}"
print(f"{'run':>3} {'setting':<11} {'wait':<7} {'p50 us':>8} {'p99 us':>8} {'cli cpu':>8} {'srv cpu':>8}")
verdicts = []
for run in range(1, runs + 1):
    for name in ("quiet", "load1", "load2"):
        report = json.load(open(f"{out}/{name}-{run}.json"))
        rows = {(r["pin"], r["wait"]): r for r in report["rows"]}
        for pin in ("same", "split", "free"):
            if not any(p == pin for p, _ in rows):
                continue
            for wait in ("block", "spin", "hybrid", "auto"):
                r = rows.get((pin, wait))
                if r is None:
                    continue
                print(f"{run:>3} {name + ' ' + pin:<11} {wait:<7} {us(r['rtt_ns']['p50'])} "
                      f"{us(r['rtt_ns']['p99'])} {us(r['client_cpu_ns'] or 0)} {us(r['server_cpu_ns'] or 0)}")
            for other, limit, stat in targets.get((name, pin), []):
                a, b = rows[(pin, "auto")]["rtt_ns"][stat], rows[(pin, other)]["rtt_ns"][stat]
                ok = a <= limit * b
                verdicts.append(ok)
                print(f"    auto {stat} / {other} {stat} = {a / b:.2f} (target <= {limit}): "
                      f"{'met' if ok else 'MISSED'}")
print(f"{sum(verdicts)} of {len(verdicts)} targets met")
EOF
