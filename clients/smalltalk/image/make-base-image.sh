#!/usr/bin/env bash
# Makes a headless, scriptable Squeak image from the one Debian's `scratch` package ships
# (Squeak 2.8-era), in one scripted start under Xvfb: Scratch's start-up raises an error
# without sound; the script opens the debugger on it and files in boot.st from its code pane
# (fixed screen positions at 1024x768). boot.st saves OUT_DIR/peerpipe-base.image, which runs
#   VM -vm-display-null -vm-sound-null OUT_DIR/peerpipe-base.image /abs/script.st ARGS...
# headless: it files in script.st and quits; an error prints "ERROR: ..." and the stack on
# standard error and ends the VM with SIGTERM (exit 143).
# Usage: make-base-image.sh VM OUT_DIR. Needs Debian's squeak-vm, scratch, xvfb and xdotool.
set -u
vm=${1:?VM} out=$(cd "${2:?OUT_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/share/scratch/Scratch.image
[ -x "$vm" ] && [ -f "$src" ] || { echo "make-base-image: needs Debian's squeak-vm and scratch packages" >&2; exit 2; }
for t in Xvfb xdotool; do command -v $t >/dev/null || { echo "make-base-image: needs $t (Debian: xvfb, xdotool)" >&2; exit 2; }; done
work=$(mktemp -d "$out/make.XXXXXX")
xpid= vpid=
cleanup() {
    [ -n "$vpid" ] && kill -9 "$vpid" 2>/dev/null
    [ -n "$xpid" ] && kill "$xpid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
cp "$src" "$work/scratch-src.image"
sed "s|@OUT@|$work|" "$here/boot.st" > "$work/boot.st"
for try in 1 2 3; do
    disp=:$((50 + RANDOM % 400))
    Xvfb $disp -screen 0 1024x768x24 -nolisten tcp >/dev/null 2>&1 & xpid=$!
    sleep 1
    rm -f "$work/peerpipe.image"
    DISPLAY=$disp timeout 90 "$vm" -vm-sound-null "$work/scratch-src.image" >"$work/make.log" 2>&1 & vpid=$!
    sleep $((6 + 4 * try))                            # Scratch starts; a sound primitive fails; a notifier opens
    DISPLAY=$disp xdotool mousemove 504 29 click 1     # the notifier's "Debug" button
    sleep $((2 * try))
    DISPLAY=$disp xdotool mousemove 700 340 click 1    # the debugger's code pane
    sleep 0.5
    DISPLAY=$disp xdotool type --delay 20 "(FileStream readOnlyFileNamed: '$work/boot.st') fileIn"
    sleep 0.3; DISPLAY=$disp xdotool key alt+a; sleep 0.3; DISPLAY=$disp xdotool key alt+d  # select all, do it
    for _ in $(seq 1 40); do [ -s "$work/peerpipe.image" ] && ! kill -0 $vpid 2>/dev/null && break; sleep 0.5; done
    kill -9 $vpid 2>/dev/null; wait $vpid 2>/dev/null; vpid=
    kill $xpid 2>/dev/null; wait $xpid 2>/dev/null; xpid=
    if [ -s "$work/peerpipe.image" ]; then
        echo 'Transcript show: 1 printString!' > "$work/ok.st"
        if timeout 20 "$vm" -vm-display-null -vm-sound-null "$work/peerpipe.image" "$work/ok.st" >/dev/null 2>&1; then
            mv "$work/peerpipe.image" "$out/peerpipe-base.image"
            echo "$out/peerpipe-base.image"; exit 0
        fi
    fi
done
cp "$work/make.log" "$out/make-base-image.log" 2>/dev/null
echo "make-base-image: could not make the image in 3 tries (the VM's output: $out/make-base-image.log)" >&2
exit 1
