#!/usr/bin/env bash
# The wait strategies where programs run: 500 f64 echoed through the codec over a pipe, every
# wait (block, spin, hybrid, auto) measured in one report per setting and run, at every
# placement (one core, two cores, the scheduler's choice) on a quiet machine, and unpinned
# beside 1 and 2 busy threads (--load). Prints, per run and setting, p50 and p99 of the round
# trip and the CPU time per round trip of client and server, then auto's p50 and p99 against
# block's and spin's. The report measures every wait of a placement in the same rounds, so
# each round gives auto and the wait it is judged against one burst each, moments apart and
# in the same state of the machine (rounds[].state). A p50 target is judged within the run's
# main state: the median of auto's round p50s over its rounds / the other's over the same
# rounds. Printed beside it: the median of the per-round ratios (auto / the other in the same
# round) and the rows' p50 ratio over all rounds. A p99 target is judged on
# the two rows' p99 over all their (shared) rounds, printed with how many of those rounds ran
# outside the main state.
#
#   bash benches/waits.sh [RUNS]        # default 3 runs of each setting; ~40 s a run
#   PEER=path/to/peer bash benches/waits.sh [RUNS]   # another build (an A/B against a release)
#
# The targets it checks (docs/PERFORMANCE.md, "Waiting where programs run"):
#   same (quiet and --load 1): auto p50 <= 1.3x block's
#   split (quiet):             auto p50 <= 1.3x spin's and <= 1.1x hybrid's
#   free (quiet):              auto p50 <= 1.3x spin's, p99 <= 2x spin's p99
#   free --load 1 and 2:       auto p50 <= block's, p99 <= 2x block's p99
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
if [ -z "${PEER:-}" ]; then
    cargo build --release --quiet --bin peer
fi
peer=${PEER:-target/release/peer}
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


def in_main_state(a, b):
    """For two rows measured in the same rounds, over the rounds of the main state (every
    round when the run found no state): the ratio of their median round p50s, the median of
    their per-round p50 ratios, and how many rounds."""
    main = a.get("main_state")
    pairs = [(ra["p50_ns"], rb["p50_ns"]) for ra, rb in zip(a["rounds"], b["rounds"])
             if ra.get("state") == main and rb.get("state") == main]
    if not pairs:
        return None, None, 0
    of_medians = median([x for x, _ in pairs]) / median([y for _, y in pairs])
    return of_medians, median([x / y for x, y in pairs if y]), len(pairs)


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
                overall = ra["rtt_ns"][stat] / rb["rtt_ns"][stat]
                rounds = len(ra["rounds"])
                if stat == "p50":
                    ratio, per_round, in_state = in_main_state(ra, rb)
                    if ratio is None:
                        ratio, per_round, in_state = overall, None, rounds
                    detail = (f"{in_state} of {rounds} rounds in the main state; median per-round "
                              f"ratio {per_round or float('nan'):.2f}; rows' p50 over all rounds "
                              f"{overall:.2f}")
                else:
                    ratio = overall
                    outside = sum(r.get("state") != ra.get("main_state") for r in ra["rounds"])
                    detail = (f"over all {rounds} rounds, {outside} of them outside the main state"
                              if outside else f"over all {rounds} rounds, all in one state")
                ok = ratio <= limit
                verdicts.append(ok)
                print(f"    auto {stat} / {other} {stat} = {ratio:.2f} (target <= {limit}): "
                      f"{'met' if ok else 'MISSED'} ({detail})")
print(f"{sum(verdicts)} of {len(verdicts)} targets met")
EOF
