#!/usr/bin/env bash
# Nothing left behind, at full count: every client kind ended every way, N times each, at
# random moments, and what each run left within a second of its end (docs/GUARANTEES.md,
# "Nothing left behind"):
#
#   - the report (pipe and shm-ring, two sizes, spin and hybrid waits) and `peer soak` (over
#     each transport in turn), ended by SIGINT, SIGTERM, SIGHUP and SIGKILL (cli/tests/leftovers.rs);
#   - a C client that never calls pp_close: returning from main, crashing (abort), killed
#     mid-call (capi/tests/leftovers.rs);
#   - a Python client killed (SIGKILL) or interrupted (KeyboardInterrupt)
#     (python/tests/test_leftovers.py; needs the venv that .ci/run builds, built here when
#     missing).
#
# A run counts as leaving something behind when, a second after the client ended, a process
# of it is alive or stopped, holds shared memory, or keeps the client's stdout or stderr
# open. `cargo test` makes a few runs of each; this makes N (default 20).
#
# Usage: benches/leftovers.sh [N]   (about 15 s per unit of N on 2 cores; 5 minutes for 20)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
export PEERPIPE_LEFTOVER_RUNS=$n
target_dir=$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

echo "== the report and peer soak: $n runs per signal"
cargo test --quiet --test leftovers -- --nocapture --test-threads 1 2>&1 | tee -a "$log" \
    || status=1

echo "== a C client without pp_close: $n runs per ending"
cargo test --quiet -p peerpipe-capi --test leftovers -- --nocapture --test-threads 1 2>&1 \
    | tee -a "$log" || status=1

echo "== a Python client: $n runs per ending"
venv="$target_dir/ci-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import peerpipe" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -r python/requirements-test.txt ./python
fi
cargo build --quiet --bin peer
PEERPIPE_PEER="$target_dir/debug/peer" "$venv/bin/python" -m pytest \
    python/tests/test_leftovers.py -q -s -p no:cacheprovider 2>&1 | tee -a "$log" || status=1

echo
echo "== summary: runs, and runs that left something behind"
grep -E '^leftovers: ' "$log" | sed 's/^leftovers: /  /' | sort
exit $status
