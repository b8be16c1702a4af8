#!/usr/bin/env bash
# Every check of the Smalltalk package (clients/smalltalk/) against peer, as CI runs it:
#     clients/smalltalk/tests/run.sh PEER
# PEER is the `peer` binary. The image is made once, in $PEERPIPE_SQUEAK_DIR (see peer-squeak).
# One line per check, `N passed, M failed` last; exit status 1 when a check failed. Every VM
# and server a check starts is ended by the check, and the last check proves none is left.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/../.." && pwd)
peer=$(readlink -f "${1:?usage: run.sh PEER}")
squeak=$here/peer-squeak
conformance=$root/clients/python/conformance.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

note() { # note STATUS NAME [OUTPUT]: count a check, show its output when it failed
    if [ "$1" = 0 ]; then passed=$((passed + 1)); echo "ok $2"
    else failed=$((failed + 1)); echo "FAIL $2"; [ -n "${3:-}" ] && printf '%s\n' "$3" | tail -25 | sed 's/^/    /'; fi
}
tally() { # tally NAME CMD...: a check whose last line is `N passed, M failed`
    local name=$1 out status last
    shift
    out=$("$@" 2>&1); status=$?
    last=$(printf '%s\n' "$out" | tail -1)
    if [ $status = 0 ] && [[ "$last" =~ ^[0-9]+\ passed,\ 0\ failed ]]; then note 0 "$name: $last"
    else note 1 "$name: exit $status, $last" "$(printf '%s\n' "$out" | grep -v '^ok ')"; fi
}

image=$(timeout 600 "$squeak" image 2>"$work/image.log")
note $? "the image is made (or found) in ${PEERPIPE_SQUEAK_DIR:-the cache}" "$(cat "$work/image.log")"
tally "PeerPipePlugin: every interpreter-proxy entry and conversion" \
    env IMAGE="$image" bash "$here/plugin/check-plugin.sh"
tally "conformance of the Smalltalk server (plugin, wait auto, peerpipe's timeouts)" \
    timeout 300 python3 "$conformance" --server "$squeak" --slow
tally "conformance of the Smalltalk server (wait block)" timeout 300 python3 "$conformance" --server "$squeak --wait block"
tally "conformance of the Smalltalk server (wait aio)" timeout 300 python3 "$conformance" --server "$squeak --wait aio"
tally "conformance of the Smalltalk server (no plugin)" \
    env PEERPIPE_SQUEAK_PLUGIN=off timeout 300 python3 "$conformance" --server "$squeak"
tally "the Smalltalk client against peer and the Smalltalk server (plugin)" \
    timeout 300 "$squeak" run "$here/tests/client-checks.st" "$peer" "$squeak"
tally "the Smalltalk client against peer and the Smalltalk server (no plugin)" \
    env PEERPIPE_SQUEAK_PLUGIN=off timeout 300 "$squeak" run "$here/tests/client-checks.st" "$peer" "$squeak"

# peer's report against the Smalltalk server: it answers, and its time and CPU are read.
out=$(timeout 300 "$peer" --spawn "$squeak" --sizes 500 --dtype f64,f32 --rounds 3 --json "$work/report.json" 2>&1)
status=$?
if [ $status = 0 ]; then
    out=$(python3 - "$work/report.json" <<'PY' 2>&1
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
assert {(r["dtype"], r["elements"]) for r in rows} == {("f64", 500), ("f32", 500)}, rows
for r in rows:
    assert r["server_ns"]["p50"] > 0, ("no server time", r["dtype"])
    assert r["server_cpu_ns"] is not None and r["server_cpu_ns"] > 0, ("no server CPU", r["dtype"])
print("rows", len(rows))
PY
); status=$?
fi
note $status "peer's report against the Smalltalk server shows server time and server CPU" "$out"

out=$(timeout 120 "$peer" soak --spawn "$squeak" --duration 5s --peers 2 --max-elements 100000 2>&1)
status=$?
[ $status = 0 ] && ! grep -q "verdict: PASS" <<<"$out" && status=1
note $status "peer soak --spawn: two Smalltalk servers verified bit for bit, RSS and descriptors flat" "$out"

out=$(timeout 300 "$here/seed-experiment" --calls 200 --peer "$peer" 2>&1)
status=$?
[ $status = 0 ] && [ "$(grep -c '^ *[1-4] ' <<<"$out")" != 4 ] && status=1
note $status "the seed's experiment prints its four rows" "$out"

sleep 0.5
left=$(pgrep -af squeakvm | grep -F "${PEERPIPE_SQUEAK_DIR:-/.cache/peerpipe/squeak}" || true)
left+=$(pgrep -af "$peer --role server" || true)
[ -z "$left" ]; note $? "no Squeak VM and no server left running" "$left"

echo "$passed passed, $failed failed"
[ $failed = 0 ]
