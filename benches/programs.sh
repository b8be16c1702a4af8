#!/usr/bin/env bash
# The default wait in the programs users run: SciPy's solve_ivp on Lorenz-96 with the
# right-hand side in a `peer` server, unpinned, as a user runs it. Prints every run, then a
# verdict per target.
#
#   bash benches/programs.sh [RUNS]     # default 10; ~1 min
#
# Series, in this order:
#   runs   RK45, RUNS separate runs of python/examples/lorenz96_solve_ivp.py, as a user starts
#          it. A run's remote solve lasts ~15 ms, less than the spells in which a virtual
#          machine's CPUs run slower, so one run can read 3x another with nothing changed:
#          the spread across runs is printed, and judged in pairs below.
#   quiet  RK45, 3 x RUNS rounds of python/bench/solve_ivp_pairs.py: in each, one solve with
#          the default wait (auto) and one with both sides spinning (spin, the best any wait
#          does on two idle CPUs), moments apart, each through a server of its own. The rounds
#          whose spin solve lies within 1.5x of its fastest, as in the rounds on either side,
#          are the main state.
#   busy   the same, RUNS rounds, beside one busy process (sh -c 'while :; do :; done'), auto
#          against block (the best fixed wait there).
#   bdf    BDF on n = 200 (t 0-0.5), RUNS rounds, auto against block: BDF's finite-difference
#          Jacobian calls the right-hand side n times in a row. Not against spin: its solves
#          starve the client's BLAS threads (2.8-50x the local solve's time), and a solve right
#          after one in the same process was seen to start out differently.
#
# The targets (docs/PERFORMANCE.md, "Waiting where programs run"):
#   runs, quiet:  every auto p50 <= 15 us; max / min of auto's p50 <= 2 within the main state
#   busy:         every auto p50 <= 15 us
#   bdf:          every auto p50 <= 15 us, and the remote solve <= 1.5x the local one's time
#
# Needs a Python with numpy, scipy and peerpipe (pip install numpy scipy ./python); set PYTHON
# to it (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
if ! [[ $runs =~ ^[1-9][0-9]*$ ]]; then
    echo "programs.sh: RUNS must be a whole number of at least 1, not '$runs'" >&2
    exit 2
fi
python=${PYTHON:-python3}
if ! "$python" -c 'import numpy, scipy, peerpipe' 2>/dev/null; then
    echo "programs.sh: $python cannot import numpy, scipy and peerpipe;" \
        "install them (pip install numpy scipy ./python) or set PYTHON" >&2
    exit 2
fi
# PEER=path/to/peer measures another build's server (an A/B against a release).
if [ -z "${PEER:-}" ]; then
    cargo build --release --quiet --bin peer
fi
export PEERPIPE_PEER=${PEER:-$PWD/target/release/peer}
out=$(mktemp -d)
busy=
cleanup() {
    if [ -n "$busy" ]; then kill "$busy" 2>/dev/null || true; fi
    rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

echo "== runs: RK45, $runs separate runs (overhead p50, us)"
for _ in $(seq 1 "$runs"); do
    "$python" python/examples/lorenz96_solve_ivp.py |
        awk '/^overhead per call/ { print $10 }' | tee -a "$out/runs.txt"
done
pairs=("$python" python/bench/solve_ivp_pairs.py)
echo "== quiet: RK45, auto against spin"
"${pairs[@]}" --rounds $((3 * runs)) --waits auto,spin --json "$out/quiet.json"
echo "== busy: RK45 beside one busy process, auto against block"
# The busy process dies with this script, however the script ends (where setpriv can say so).
busy_loop=(sh -c 'while :; do :; done')
if setpriv --pdeathsig KILL true 2>/dev/null; then
    busy_loop=(setpriv --pdeathsig KILL "${busy_loop[@]}")
fi
"${busy_loop[@]}" &
busy=$!
"${pairs[@]}" --rounds "$runs" --waits auto,block --json "$out/busy.json"
kill "$busy"
busy=
echo "== bdf: BDF, n = 200, auto against block"
"${pairs[@]}" --rounds "$runs" --method BDF --n 200 --t-end 0.5 --waits auto,block \
    --json "$out/bdf.json"

python3 - "$out" <<'PY'
import json, sys

out = sys.argv[1]


def verdict(ok):
    return "met" if ok else "MISSED"


def spread(v):
    return f"{min(v):.2f}-{max(v):.2f} us (max / min {max(v) / min(v):.2f})" if v else "none"


def load(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)


def p50(doc, wait):
    return [row[wait]["p50_us"] for row in doc["rounds"]]


runs = [float(line) for line in open(f"{out}/runs.txt")]
quiet, busy, bdf = load("quiet"), load("busy"), load("bdf")
auto = p50(quiet, "auto")
main = [auto[i] for i in quiet["main_state"]]
print("\nverdict")
print(f"  runs:  auto {spread(runs)}; <= 15 us in {sum(p <= 15 for p in runs)} of {len(runs)}: "
      f"{verdict(max(runs) <= 15)}")
print(f"  quiet: auto {spread(auto)}, spin {spread(p50(quiet, 'spin'))}; <= 15 us: "
      f"{verdict(max(auto) <= 15)}; main state ({len(main)} of {len(auto)} rounds): auto "
      f"{spread(main)}: {verdict(max(main) <= 2 * min(main)) if main else 'not judged'}")
auto = p50(busy, "auto")
print(f"  busy:  auto {spread(auto)}, block {spread(p50(busy, 'block'))}; <= 15 us: "
      f"{verdict(max(auto) <= 15)}")
auto = p50(bdf, "auto")
ratios = [row["auto"]["solve_s"] / row["local_s"] for row in bdf["rounds"]]
print(f"  bdf:   auto {spread(auto)}, remote / local solve {min(ratios):.2f}-{max(ratios):.2f}: "
      f"{verdict(max(auto) <= 15 and max(ratios) <= 1.5)}")
PY
