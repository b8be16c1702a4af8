#!/usr/bin/env bash
# peer next to other IPC libraries, in one run, interleaved: one table.
#
#   bash benches/peers/run.sh [ROUNDS]          # default 5 rounds
#
# Builds `peer` (the main crate), this workspace's ping-pongs (iceoryx2 0.10 request-response,
# ipc-channel 0.23, and peer_pingpong, peerpipe's client in the same shape) and the C shared-
# memory ping-pong (benches/c/shm_pingpong.c), then runs ROUNDS rounds. Each round runs every
# contender once, in a fresh random order, so that a slow spell of the machine (virtual
# machines have them, 2-4x for seconds) hits every row alike; a row's figure is the median over rounds of
# its p50, with the smallest and largest per-round p50 beside it, and its ratio is the median
# over rounds of (its p50 / the C spin ping-pong's p50 of the same round and size). Every
# process pair is placed like `peer --pin split`: client on the first CPU, server on the
# second. Every program checks each echoed array bit for bit and has its own timeouts.
#
# Rows: 500 f64 and 1 Mi f64 (8 MiB). "spin" / "polling" rows spin while waiting; "block" /
# "events" rows sleep in the kernel until woken. The 1 Mi rows include peer's codec path on
# both sides (`--path codec --handler echo`) over shm-ring and pipe, whose per-round ratio is
# printed on its own line. "bare ring, threads" (ring_pingpong) is peer's shm-ring without the
# layers above it (no frames, no Peer, no serve loop, two threads of one process): the part of
# peer's round trip that the ring itself costs.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS="${1:-5}"
OUT="${PEERS_OUT:-target/peers-run}"
mkdir -p "$OUT"

echo "== building peer, the peers workspace and the C ping-pong" >&2
cargo build --release --quiet --bin peer
(cd benches/peers && cargo build --release --quiet)
gcc -O2 -Wall -Wextra -pthread -o "$OUT/shm_pingpong" benches/c/shm_pingpong.c
PEER="$PWD/target/release/peer"
BIN="$PWD/benches/peers/target/release"

# name|command ; the commands print one result line each (ipc-channel prints two).
small=(
  "c-shm spin|$OUT/shm_pingpong 4000 20000 spin 50 split"
  "c-shm block|$OUT/shm_pingpong 4000 20000 block 50 split"
  "peer shm-ring zero-copy echo spin|$BIN/peer_pingpong --peer-exe $PEER --transport shm-ring --wait spin --handler echo --elements 500"
  "peer shm-ring zero-copy echo-raw spin|$BIN/peer_pingpong --peer-exe $PEER --transport shm-ring --wait spin --handler echo-raw --elements 500"
  "peer shm-ring bare ring, threads|$BIN/ring_pingpong --elements 500"
  "peer shm-ring zero-copy echo-raw block|$BIN/peer_pingpong --peer-exe $PEER --transport shm-ring --wait block --handler echo-raw --elements 500"
  "peer pipe zero-copy echo-raw spin|$BIN/peer_pingpong --peer-exe $PEER --transport pipe --wait spin --handler echo-raw --elements 500"
  "peer pipe zero-copy echo-raw block|$BIN/peer_pingpong --peer-exe $PEER --transport pipe --wait block --handler echo-raw --elements 500"
  "iceoryx2 polling|$BIN/iceoryx2_pingpong --wait polling --elements 500"
  "iceoryx2 events|$BIN/iceoryx2_pingpong --wait events --elements 500"
  "ipc-channel (block)|$BIN/ipc_channel_pingpong --pin split --elements 500 --iterations 20000 --warmup 2000"
)
M=1048576
LI="--iterations 60 --warmup 6"
large=(
  "c-shm spin|$OUT/shm_pingpong $((M * 8)) 60 spin 50 split"
  "c-shm block|$OUT/shm_pingpong $((M * 8)) 60 block 50 split"
  "peer shm-ring zero-copy echo-raw spin|$BIN/peer_pingpong --peer-exe $PEER --transport shm-ring --wait spin --handler echo-raw --elements $M $LI"
  "peer shm-ring zero-copy echo-raw block|$BIN/peer_pingpong --peer-exe $PEER --transport shm-ring --wait block --handler echo-raw --elements $M $LI"
  "peer pipe zero-copy echo-raw spin|$BIN/peer_pingpong --peer-exe $PEER --transport pipe --wait spin --handler echo-raw --elements $M $LI"
  "peer shm-ring codec echo hybrid|$BIN/peer_pingpong --peer-exe $PEER --transport shm-ring --wait hybrid --path codec --handler echo --elements $M $LI"
  "peer pipe codec echo hybrid|$BIN/peer_pingpong --peer-exe $PEER --transport pipe --wait hybrid --path codec --handler echo --elements $M $LI"
  "iceoryx2 polling|$BIN/iceoryx2_pingpong --wait polling --elements $M $LI"
  "iceoryx2 events|$BIN/iceoryx2_pingpong --wait events --elements $M $LI"
  "ipc-channel (block)|$BIN/ipc_channel_pingpong --pin split --elements $M $LI"
)

results="$OUT/results.tsv"
: > "$results"
run_set() { # size-label, entries...
  local size="$1"; shift
  local entries=("$@")
  local order
  order=$(seq 0 $((${#entries[@]} - 1)) | shuf)
  for i in $order; do
    local name="${entries[$i]%%|*}" cmd="${entries[$i]#*|}"
    local out
    if ! out=$(timeout 300 $cmd 2>"$OUT/last.err"); then
      echo "FAILED: $name ($size): $(tail -3 "$OUT/last.err")" >&2
      continue
    fi
    # ipc-channel prints serde-vec and bytes-le lines; keep both, named by their variant.
    while IFS= read -r line; do
      local p50 label="$name"
      # peer_pingpong's second line: the client's encode and decode medians per call.
      case "$line" in *encode_med_ns=*)
        case "$name" in *codec*)
          printf '%s\t%s\t%s\t%s\n' "$round" "$size" "$name [client encode]" "$(sed -n 's/.*encode_med_ns=\([0-9]*\).*/\1/p' <<<"$line")" >> "$results"
          printf '%s\t%s\t%s\t%s\n' "$round" "$size" "$name [client decode]" "$(sed -n 's/.*decode_med_ns=\([0-9]*\).*/\1/p' <<<"$line")" >> "$results";;
        esac
        continue;;
      esac
      p50=$(sed -n 's/.*p50_ns=\([0-9]*\).*/\1/p' <<<"$line")
      [ -n "$p50" ] || continue
      case "$line" in "ipc-channel serde-vec"*) label="ipc-channel serde-vec (block)";; "ipc-channel bytes-le"*) label="ipc-channel bytes-le (block)";; esac
      printf '%s\t%s\t%s\t%s\n' "$round" "$size" "$label" "$p50" >> "$results"
    done <<<"$out"
  done
}

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round/$ROUNDS" >&2
  if [ $((RANDOM % 2)) -eq 0 ]; then
    run_set "500 f64" "${small[@]}"; run_set "1 Mi f64" "${large[@]}"
  else
    run_set "1 Mi f64" "${large[@]}"; run_set "500 f64" "${small[@]}"
  fi
done

python3 - "$results" "$ROUNDS" <<'EOF'
import sys, statistics
from collections import defaultdict
rows = defaultdict(dict)   # (size, name) -> {round: p50}
for line in open(sys.argv[1]):
    rnd, size, name, p50 = line.rstrip("\n").split("\t")
    rows[(size, name)][int(rnd)] = int(p50)
def fmt(ns):
    return f"{ns / 1e3:.2f} us" if ns < 1e6 else f"{ns / 1e6:.3f} ms"
print(f"peers, interleaved, {sys.argv[2]} rounds; p50 of each round trip; ratio = median over rounds of p50 / C spin p50 of the same round")
for size in ("500 f64", "1 Mi f64"):
    print(f"\n{size}")
    print(f"  {'contender':<42} {'p50 (median)':>13} {'per-round range':>23} {'x C spin':>9} {'rounds':>6}")
    ref = rows.get((size, "c-shm spin"), {})
    names = sorted((n for (s, n) in rows if s == size), key=lambda n: statistics.median(rows[(size, n)].values()))
    for name in names:
        r = rows[(size, name)]
        vals = list(r.values())
        ratios = [r[k] / ref[k] for k in r if k in ref]
        ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        print(f"  {name:<42} {fmt(statistics.median(vals)):>13} {fmt(min(vals)):>10} .. {fmt(max(vals)):<10} {ratio:>9} {len(vals):>6}")
    def paired(a, b, label):
        ra, rb = rows.get((size, a), {}), rows.get((size, b), {})
        ratios = [ra[k] / rb[k] for k in sorted(ra) if k in rb]
        if ratios:
            print(f"  {label}: per round " + ", ".join(f"{x:.2f}x" for x in ratios) + f"; median {statistics.median(ratios):.2f}x")
    paired("peer shm-ring zero-copy echo spin", "c-shm spin", "peer shm-ring zero-copy echo spin / C spin")
    paired("peer shm-ring zero-copy echo-raw spin", "iceoryx2 polling", "peer shm-ring echo-raw spin / iceoryx2 polling")
    paired("peer shm-ring zero-copy echo-raw block", "iceoryx2 events", "peer shm-ring echo-raw block / iceoryx2 events")
    paired("peer pipe codec echo hybrid", "peer shm-ring codec echo hybrid", "pipe codec / shm-ring codec (want >= 3x)")
EOF
