#!/usr/bin/env bash
# The ssh routes side by side on this machine: starts a throw-away sshd on 127.0.0.1 (its own
# config, host key and user key under a temporary directory; nothing of the system's sshd is
# read or changed), runs the report through it RUNS times with
#   peer --spawn "ssh ... root@127.0.0.1 taskset -c 1 PEER --role server" --transport pipe,tcp
# (each route against its own floor, measured through the same ssh command), prints the
# figures docs/PERFORMANCE.md quotes, and stops the daemon. Needs openssh-server (.ci/run
# installs it) and root (sshd's privilege separation; key login as root).
#
#   cargo build --release && benches/ssh_routes.sh [RUNS] [extra peer flags...]
#   REMOTE_PREFIX= WAIT=auto benches/ssh_routes.sh 3 --pin free   # as a user runs it: unpinned
#
# WAIT is the wait strategy of both sides (default hybrid, the figures PERFORMANCE.md quotes
# for the pinned routes); an empty REMOTE_PREFIX leaves the remote server unpinned.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
peer=${PEER:-$PWD/target/release/peer}
# Over a loopback ssh both ends share this machine; the report pins its client side to the
# first CPU (--pin split) and the remote servers are pinned to the second with taskset, so
# that a floor and a row never differ by where the scheduler put their server.
remote=${REMOTE_PREFIX-taskset -c 1}
dir=$(mktemp -d /tmp/peerpipe-sshd-bench.XXXXXX)
daemon=
cleanup() {
    [ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$dir/user_key"
cp "$dir/user_key.pub" "$dir/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1:$port
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PrintMotd no
MaxStartups 30
LogLevel ERROR
CONF
mkdir -p /run/sshd
/usr/sbin/sshd -f "$dir/sshd_config" -D -e 2>"$dir/sshd.log" &
daemon=$!
for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
    sleep 0.05
done
ssh="ssh -F /dev/null -i $dir/user_key -p $port -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR root@127.0.0.1"
for run in $(seq "$runs"); do
    json=target/ssh-routes-$run.json
    "$peer" --spawn "$ssh $remote $peer --role server" --transport pipe,tcp \
        --sizes 500,65536 --dtype f64 --path zero-copy --wait "${WAIT:-hybrid}" "$@" --json "$json" \
        > "target/ssh-routes-$run.txt"
    python3 - "$json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
rows = {(x["transport"], x["elements"]): x for x in r["rows"]}
for n in (500, 65536):
    p, t = rows[("pipe", n)], rows[("tcp", n)]
    print(f"{n:>6} f64: ssh pipe p50 {p['rtt_ns']['p50']/1e3:8.1f} us (ratio {p['ratio_to_baseline']:.2f} "
          f"[{p['ratio_ci'][0]:.2f}-{p['ratio_ci'][1]:.2f}]), tcp p50 {t['rtt_ns']['p50']/1e3:7.1f} us "
          f"(ratio {t['ratio_to_baseline']:.2f} [{t['ratio_ci'][0]:.2f}-{t['ratio_ci'][1]:.2f}]); "
          f"tcp/pipe {t['rtt_ns']['p50']/p['rtt_ns']['p50']:.3f}, speed-up {p['rtt_ns']['p50']/t['rtt_ns']['p50']:.1f}x; "
          f"server cpu {p['server_cpu_ns']}")
PY
done
