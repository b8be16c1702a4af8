#!/usr/bin/env bash
# Round trips of the Smalltalk client, every arm interleaved round by round in one run:
#     clients/smalltalk/bench/calls.sh PEER [--rounds R] [--calls N] [--pin split|same|free]
# Arms (500 f64): peer's echo-raw server with the #aio and the #block wait, bytes kept; one side
# converting, by the primitive and in Smalltalk; two images, both sides converting, by the
# primitive and in Smalltalk. Then how far another Smalltalk process gets while a call of about
# a millisecond waits, under each wait. --pin split: the client's VM on CPU 0, every server on
# CPU 1; same: all on CPU 0; free (default): wherever the scheduler puts them.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
peer=$(readlink -f "${1:?usage: calls.sh PEER [--rounds R] [--calls N] [--pin split|same|free]}")
shift
rounds=10 calls=500 pin=free
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --calls) calls=$2; shift 2 ;;
        --pin) pin=$2; shift 2 ;;
        *) echo "calls.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
case "$pin" in
    free) client=() prefix= ;;
    split) client=(taskset -c 0) prefix="taskset -c 1 " ;;
    same) client=(taskset -c 0) prefix="taskset -c 0 " ;;
    *) echo "calls.sh: --pin takes split, same or free" >&2; exit 2 ;;
esac
echo "pin $pin"
exec "${client[@]}" "$here/peer-squeak" run "$here/bench/calls.st" "$rounds" "$calls" "$here/peer-squeak" "$peer" ${prefix:+"$prefix"}
