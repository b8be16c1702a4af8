#!/usr/bin/env bash
# Does the report's answer hold still when asked again? The checks of docs/PERFORMANCE.md,
# "Paired measurement", on this machine:
#
#   1. ten consecutive runs of one row (`peer repeat 10`): how many of the ten 95 % intervals
#      contain the median ratio of the other runs in their machine state, or say unresolved;
#   2. `peer compare --abs 100ns --rel 5` on five pairs of same-configuration runs (should say
#      "same": exit 0), and on five pairs of a run and, right after it, one with
#      `--server-delay 500ns` (should say "differs": exit 1; exit 3 when the machine changed
#      state between the two), with the p50 difference each time;
#   3. five runs of the Lorenz-96 example: the spread of its overhead_ratio.
#
# Usage: benches/paired_check.sh [OUTPUT_DIR]   (default target/paired-check; about 1 minute)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/paired-check}
mkdir -p "$out"
cargo build --quiet --release --bin peer --example lorenz96
bin=${CARGO_TARGET_DIR:-target}/release
peer=$bin/peer
row=(--sizes 500 --dtype f64 --path codec --handler echo --wait hybrid)

echo "== 1. ten consecutive runs: peer repeat 10 -- ${row[*]}"
# Each run's interval against the median ratio of the other runs in its machine state (exit 1
# when fewer than 9 of 10 held it or said unresolved); the runs' reports stay in $out/runN.json.
set +e
"$peer" repeat 10 --dir "$out" -- "${row[@]}"
set -e

echo "== 2. peer compare --abs 100ns --rel 5"
same=0
delayed=0
other_state=0
for i in 1 2 3 4 5; do
    a="$out/run$((2 * i - 1)).json"
    b="$out/run$((2 * i)).json"
    set +e
    "$peer" compare --abs 100ns --rel 5 "$a" "$b" >"$out/same$i.txt"
    code=$?
    set -e
    [ "$code" = 0 ] && same=$((same + 1))
    # The run without the delay is taken right before the one with it, so that both are
    # likely taken in one state of the machine (compare exits 3 when they were not).
    b="$out/b$i.json"
    "$peer" "${row[@]}" --json "$b" >/dev/null
    "$peer" "${row[@]}" --server-delay 500ns --json "$out/d$i.json" >/dev/null
    set +e
    "$peer" compare --abs 100ns --rel 5 "$b" "$out/d$i.json" >"$out/delay$i.txt"
    dcode=$?
    set -e
    [ "$dcode" = 1 ] && delayed=$((delayed + 1))
    [ "$dcode" = 3 ] && other_state=$((other_state + 1))
    python3 - "$b" "$out/d$i.json" "$code" "$dcode" <<'EOF'
import json, sys
a, d = (json.load(open(p)) for p in sys.argv[1:3])
ra, rd = a["rows"][0], d["rows"][0]
fa = next(f for f in a["baseline"] if f["bytes"] == ra["bytes"])["rtt_ns"]["p50"]
fd = next(f for f in d["baseline"] if f["bytes"] == rd["bytes"])["rtt_ns"]["p50"]
paired = (rd["ratio_to_baseline"] - ra["ratio_to_baseline"]) * (fa + fd) / 2
print(f"pair: same-config exit {sys.argv[3]}; with --server-delay 500ns exit {sys.argv[4]}: "
      f"p50 {ra['rtt_ns']['p50']} -> {rd['rtt_ns']['p50']} ns "
      f"({rd['rtt_ns']['p50'] - ra['rtt_ns']['p50']:+d} ns), paired difference {paired:+.0f} ns, "
      f"server p50 {ra['server_ns']['p50']} -> {rd['server_ns']['p50']} ns")
EOF
done
echo "same configuration: exit 0 in $same of 5 (target >= 4); with the delay: exit 1 in $delayed of 5 (target >= 4)"
echo "(exit 3, a pair taken in two states of the machine and not judged: $other_state of the 5 delay pairs)"

echo "== 3. five runs of the Lorenz-96 example"
for i in 1 2 3 4 5; do
    "$bin"/examples/lorenz96 | tail -n 1 >"$out/lorenz$i.json"
done
python3 - "$out" <<'EOF'
import json, sys
out = sys.argv[1]
runs = [json.load(open(f"{out}/lorenz{i}.json")) for i in range(1, 6)]
ratios = [r["overhead_ratio"] for r in runs]
print("overhead_ratio:", " ".join(f"{x:.3f}" for x in ratios),
      f"max/min {max(ratios) / min(ratios):.3f} (target <= 1.2)")
print("overhead p50 (ns):", " ".join(str(r["overhead_p50_ns"]) for r in runs),
      "; floor p50 (ns):", " ".join(str(r["baseline_p50_ns"]) for r in runs))
EOF
