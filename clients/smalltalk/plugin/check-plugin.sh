#!/usr/bin/env bash
# Builds PeerPipePlugin, runs check-plugin.st in the Squeak VM with it, and prints the
# results; the last line is "N passed, M failed".  Exit status is non-zero on any failure.
#
# Environment: VM (default: the Debian squeak-vm binary), IMAGE (default: the image
# `peer-squeak image` makes or finds), CC (default gcc), VM_TIMEOUT seconds (default 30; a run
# takes about 2 s).
set -u

here=$(cd "$(dirname "$0")" && pwd)
VM=${VM:-$(ls -d /usr/lib/squeak/*/squeakvm 2>/dev/null | head -n 1)}
IMAGE=${IMAGE:-$("$here/../peer-squeak" image 2>/dev/null)}
CC=${CC:-gcc}
VM_TIMEOUT=${VM_TIMEOUT:-30}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ppplugin-check.XXXXXX") || { echo "cannot make a temp dir"; echo "0 passed, 1 failed"; exit 1; }
vm_pid=
cleanup() {
	# Stop the VM if it is still running (only the process this script started).
	if [ -n "$vm_pid" ] && kill -0 "$vm_pid" 2>/dev/null; then
		kill -TERM "$vm_pid" 2>/dev/null
		sleep 1
		kill -KILL "$vm_pid" 2>/dev/null
		wait "$vm_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

fail_early() {
	echo "$1"
	echo "0 passed, 1 failed"
	exit 1
}

[ -x "$VM" ] || fail_early "no Squeak VM found (set VM=...)"
[ -r "$IMAGE" ] || fail_early "no image at $IMAGE (set IMAGE=...)"

# 1. Build the plugin into a plugin directory that also links the VM's own modules
#    (-plugins replaces the VM's default directory).
plugdir="$tmp/plugins"
mkdir -p "$plugdir"
if ! "$CC" -O2 -Wall -Wextra -Werror -fPIC -shared -o "$plugdir/so.PeerPipePlugin" "$here/PeerPipePlugin.c" 2>"$tmp/cc.err"; then
	cat "$tmp/cc.err"
	fail_early "plugin build failed"
fi
for m in "$(dirname "$VM")"/so.*; do
	ln -s "$m" "$plugdir/$(basename "$m")"
done

# 2. Run the check inside the VM.  The image files in the script and quits; an error in
#    the script ends it with status 143.  timeout bounds the run; the trap above kills it
#    if this script is interrupted.
out="$tmp/check.out"
timeout -k 5 "$VM_TIMEOUT" "$VM" -plugins "$plugdir" -vm-display-null -vm-sound-null \
	"$IMAGE" "$here/check-plugin.st" "$out" >"$tmp/vm.stdout" 2>"$tmp/vm.stderr" &
vm_pid=$!
wait "$vm_pid"
rc=$?
vm_pid=

# 3. Report.
passed=0
failed=0
if [ -f "$out" ]; then
	passed=$(grep -c '^PASS ' "$out")
	failed=$(grep -c '^FAIL ' "$out")
	grep -E '^(FAIL|INFO|TIME) ' "$out"
fi
if [ "$rc" -ne 0 ] || ! grep -q '^DONE ' "$out" 2>/dev/null; then
	echo "FAIL VM run did not complete (exit status $rc)"
	[ -s "$tmp/vm.stderr" ] && sed -n '1,40p' "$tmp/vm.stderr"
	failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
