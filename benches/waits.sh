#!/usr/bin/env bash
# The wait strategies where programs run: 500 f64 echoed through the codec over a pipe, every
# wait (block, spin, hybrid, auto) measured in one report per setting and run, at every
# placement (one core, two cores, the scheduler's choice) on a quiet machine, and unpinned
# beside 1 and 2 busy threads (--load). Prints, per run and setting, p50 and p99 of the round
# trip and the CPU time per round trip of client and server, then auto's p50 against block's
# and spin's. The report measures each wait in a group of its own, so two waits of one run can
# have run in different states of the machine (rounds[].state): such a comparison is marked,
# with the two rows' p50 ratio over the rounds of the state both ran in most, when there is one.
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


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def across_states(report, a, b, other):
    """A note when rows a and b ran mostly in different machine states, else ''."""
    sa, sb = a.get("main_state"), b.get("main_state")
    if sa is None or sb is None or sa == sb:
        return ""
    probe = {s["id"]: s["probe_ns"] for s in report["machine"].get("states", [])}
    if sa not in probe or sb not in probe:
        return ""
    note = (f" [across machine states: 4 KiB across CPUs took {probe[sa] / 1e3:.1f} us in most of "
            f"auto's rounds, {probe[sb] / 1e3:.1f} us in most of {other}'s")
    in_state = lambda row, s: [r["p50_ns"] for r in row["rounds"] if r.get("state") == s]
    common = max(probe, key=lambda s: min(len(in_state(a, s)), len(in_state(b, s))))
    pa, pb = in_state(a, common), in_state(b, common)
    if min(len(pa), len(pb)) >= 5:
        note += (f"; in the state both ran in most, median round p50 ratio "
                 f"{median(pa) / median(pb):.2f} over {len(pa)} and {len(pb)} rounds")
    return note + "]"


across = 0
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
                ra, rb = rows[(pin, "auto")], rows[(pin, other)]
                a, b = ra["rtt_ns"][stat], rb["rtt_ns"][stat]
                ok = a <= limit * b
                verdicts.append(ok)
                note = across_states(report, ra, rb, other)
                across += bool(note)
                print(f"    auto {stat} / {other} {stat} = {a / b:.2f} (target <= {limit}): "
                      f"{'met' if ok else 'MISSED'}{note}")
print(f"{sum(verdicts)} of {len(verdicts)} targets met"
      + (f"; {across} of the {len(verdicts)} compared rows that ran mostly in different states "
         "of the machine (marked)" if across else ""))
EOF
