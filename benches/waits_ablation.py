#!/usr/bin/env python3
"""The `auto` wait, mechanism by mechanism: what each of its mechanisms moves at the
placements and loads of benches/waits.sh.

`peer` is built with the cargo feature `wait-ablation` (its own target dir,
target/wait-ablation), under which `PEERPIPE_WAIT_ABLATE=NAME` turns one mechanism of `auto`
off in the client and in the server it spawns (src/transport/wait/ablation.rs lists them).
For each setting of waits.sh (quiet at --pin same,split,free; --load 1 at same,free; --load 2
at free), one report per mechanism measures `--wait block,spin,auto` (500 f64 echoed through
the codec over a pipe; block and spin are measured in the same rounds as auto, as references)
with that mechanism off, and full `auto` is measured between them: full, off-A, off-B, full,
off-C, off-D, full, ... so that every report with a mechanism off has a full one beside it, the
order of the mechanisms reversed every other repetition. Every report runs under
`flock /tmp/peerpipe-measure.lock`.

Per cell (setting and placement) and mechanism it prints auto's p50, p99 and CPU time per
round trip (client + server) with the mechanism off, and how that moved auto against the
wait it is judged against in waits.sh, measured in the same rounds (spin at quiet split and
free, block elsewhere): (auto/ref with it off) / (auto/ref with all on, the mean of the full
reports on either side), as the range over the repetitions, beside the noise: the range of
the same ratio between two successive full reports of that cell. `*` marks a ratio whose
every repetition lies beyond that noise, on the same side.

    python3 benches/waits_ablation.py [--reps 2] [--out DIR]   # ~17 min a repetition
    PEER=path/to/peer python3 benches/waits_ablation.py         # a build with the feature
    python3 benches/waits_ablation.py --only probe+resume,yield+spinyield   # pairs off at once
    python3 benches/waits_ablation.py --analyse DIR            # print the table of a past run
"""

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MECHANISMS = [
    "stop",
    "probe",
    "resume",
    "yield",
    "dearyield",
    "spinyield",
    "confine",
    "move",
]
COMMON = ["--sizes", "500", "--dtype", "f64", "--path", "codec", "--handler", "echo"]
COMMON += ["--wait", "block,spin,auto"]
SETTINGS = {
    "quiet": ["--pin", "same,split,free"],
    "load1": ["--pin", "same,free", "--load", "1"],
    "load2": ["--pin", "free", "--load", "2"],
}
LOCK = "/tmp/peerpipe-measure.lock"
STATS = ("p50", "p99", "cpu")
BASES = ("abs", "rel")


def sequence(mechanisms):
    """full, A, B, full, C, D, full, ...: every mechanism beside a full report."""
    order = ["full"]
    for i in range(0, len(mechanisms), 2):
        order += mechanisms[i : i + 2] + ["full"]
    return order


def build(root):
    subprocess.run(
        ["cargo", "build", "--release", "--quiet", "--bin", "peer"]
        + [
            "--features",
            "peerpipe/wait-ablation",
            "--target-dir",
            "target/wait-ablation",
        ],
        cwd=root,
        check=True,
    )
    return root / "target/wait-ablation/release/peer"


def measure(peer, out, reps, mechanisms):
    runs = []
    for rep in range(reps):
        order = mechanisms if rep % 2 == 0 else mechanisms[::-1]
        for setting, flags in SETTINGS.items():
            for slot, name in enumerate(sequence(order)):
                stem = f"{rep}-{setting}-{slot:02}-{name}"
                env = dict(
                    os.environ,
                    PEERPIPE_WAIT_ABLATE=""
                    if name == "full"
                    else name.replace("+", ","),
                )
                cmd = [
                    "flock",
                    LOCK,
                    str(peer),
                    *COMMON,
                    *flags,
                    "--json",
                    f"{out}/{stem}.json",
                ]
                with open(f"{out}/{stem}.txt", "w") as text:
                    subprocess.run(cmd, env=env, stdout=text, check=True)
                runs.append(stem)
                print(f"measured {stem}", file=sys.stderr, flush=True)
    return runs


# What auto is judged against in each cell, as in benches/waits.sh: spin on two cores, else block.
REFERENCE = {("quiet", "split"): "spin", ("quiet", "free"): "spin"}


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def cpu(row):
    """CPU time per round trip of client and server, ns."""
    return (row["client_cpu_ns"] or 0) + (row["server_cpu_ns"] or 0)


def auto_rows(path, setting):
    """Per pin: auto's p50, p99 and CPU per round trip (client + server), each in µs and over
    the reference wait's in the same report (p50: the median of the per-round ratios), and
    the client's counts."""
    report = json.loads(Path(path).read_text())
    rows = {(row["pin"], row["wait"]): row for row in report["rows"]}
    out = {}
    for (pin, wait), auto in rows.items():
        if wait != "auto":
            continue
        ref = rows[(pin, REFERENCE.get((setting, pin), "block"))]
        rounds = zip(auto["rounds"], ref["rounds"])
        out[pin] = {
            "abs": {
                "p50": auto["rtt_ns"]["p50"] / 1e3,
                "p99": auto["rtt_ns"]["p99"] / 1e3,
                "cpu": cpu(auto) / 1e3,
            },
            "rel": {
                "p50": median(
                    [a["p50_ns"] / b["p50_ns"] for a, b in rounds if b["p50_ns"]]
                ),
                "p99": auto["rtt_ns"]["p99"] / ref["rtt_ns"]["p99"],
                "cpu": cpu(auto) / cpu(ref) if cpu(ref) else float("nan"),
            },
            "waits": auto.get("client_waits") or {},
        }
    return out, report["machine"]


def span(values, digits=2):
    if not values:
        return "-"
    lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def analyse(out):
    by_run = {}
    for path in sorted(Path(out).glob("*.json")):
        rep, setting, slot, name = path.stem.split("-", 3)
        by_run.setdefault((rep, setting), []).append((int(slot), name, path))
    # (cell, basis) -> name -> stat -> [(off, on)]; (cell, basis) -> stat -> [full/full]
    pairs, noise, absolute, counts, states = {}, {}, {}, {}, set()
    for (_rep, setting), slots in sorted(by_run.items()):
        slots.sort()
        data = {}
        for slot, _name, path in slots:
            data[slot], machine = auto_rows(path, setting)
            for state in machine.get("states", []):
                states.add((state["probe_ns"], state["rounds"]))
        fulls = [slot for slot, name, _ in slots if name == "full"]
        for a, b in itertools.pairwise(fulls):
            for pin in data[a]:
                for stat, basis in itertools.product(STATS, BASES):
                    ratio = data[b][pin][basis][stat] / data[a][pin][basis][stat]
                    band = noise.setdefault((setting, pin, basis), {})
                    band.setdefault(stat, []).append(ratio)
        for slot, name, _ in slots:
            for pin, row in data[slot].items():
                cell = (setting, pin)
                for stat in STATS:
                    absolute.setdefault((*cell, name, stat), []).append(
                        row["abs"][stat]
                    )
                counts.setdefault((*cell, name), []).append(row["waits"])
                if name == "full":
                    continue
                # The nearest report with all on before and after it.
                before = [s for s in fulls if s < slot][-1:]
                beside = before + [s for s in fulls if s > slot][:1]
                for stat, basis in itertools.product(STATS, BASES):
                    on = sum(data[s][pin][basis][stat] for s in beside) / len(beside)
                    by_name = pairs.setdefault((*cell, basis), {}).setdefault(name, {})
                    by_name.setdefault(stat, []).append((row[basis][stat], on))

    print(
        "auto with one mechanism off: its figure in us (range over repetitions), and what\n"
        "turning it off moved: its figure over that of the reports with all on beside it\n"
        "(a: auto's own figure; r: auto over ref, measured in the same rounds, p50 the median\n"
        "per-round ratio; ref spin at quiet split and free, block elsewhere), whichever of a\n"
        "and r varies less between two successive reports with all on (noise);\n"
        "* every repetition beyond the noise, on the same side."
    )
    cells = sorted({key[:2] for key in pairs})
    print(f"{'cell':<12} {'mechanism':<10} " + " ".join(f"{s:>24}" for s in STATS))
    for cell in cells:
        basis = {}
        for stat in STATS:
            width = {}
            for b in BASES:
                band = noise.get((*cell, b), {}).get(stat) or [1.0]
                width[b] = max(abs(math.log(r)) if r > 0 else math.inf for r in band)
            basis[stat] = min(BASES, key=width.get)
        full = [span(absolute.get((*cell, "full", s), []), 1) for s in STATS]
        print(
            f"{cell[0] + ' ' + cell[1]:<12} {'all on':<10} "
            + " ".join(f"{f:>24}" for f in full)
        )
        ref = REFERENCE.get(cell, "block")
        any_name = next(iter(pairs[(*cell, "rel")].values()))
        rel = [span([on for _, on in any_name[s]]) for s in STATS]
        print(f"{'':<12} {'r: /' + ref:<10} " + " ".join(f"{f:>24}" for f in rel))
        bands = [noise.get((*cell, basis[s]), {}).get(s, []) for s in STATS]
        print(
            f"{'':<12} {'noise':<10} "
            + " ".join(
                f"{basis[s][0] + ' ' + span(b):>24}" for s, b in zip(STATS, bands)
            )
        )
        measured = pairs[(*cell, "rel")]
        for name in [*MECHANISMS, *sorted(set(measured) - set(MECHANISMS))]:
            if name not in measured:
                continue
            fields = []
            for stat, band in zip(STATS, bands):
                got = pairs[(*cell, basis[stat])][name][stat]
                ratios = [off / on for off, on in got if on]
                lo, hi = (min(band), max(band)) if band else (1.0, 1.0)
                lo, hi = min(lo, 1 / hi), max(hi, 1 / lo)
                beyond = ratios and (
                    all(r > hi for r in ratios) or all(r < lo for r in ratios)
                )
                offs = span(absolute[(*cell, name, stat)], 1)
                fields.append(
                    f"{offs} {basis[stat][0]}{span(ratios)}{'*' if beyond else ' '}"
                )
            print(f"{'':<12} {name:<10} " + " ".join(f"{f:>24}" for f in fields))
    print(
        "\nclient counts of auto (first repetition): with all on, then each mechanism off"
    )
    keys = (
        "spun",
        "hits",
        "slept_at_once",
        "probes",
        "contended",
        "dear_yields",
    )
    for cell in cells:
        for name in ["full", *MECHANISMS]:
            seen = counts.get((*cell, name))
            if seen:
                numbers = " ".join(f"{k}={seen[0].get(k, '-')}" for k in keys)
                moves = seen[0].get("moves")
                print(
                    f"{cell[0] + ' ' + cell[1]:<12} {name:<10} {numbers} moves={moves}"
                )
    print(
        "\nmachine states (4 KiB between the first two CPUs and back: the probe; rounds): "
        + ", ".join(f"{p / 1e3:.2f} us x{r}" for p, r in sorted(states))
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument(
        "--out", help="keep the reports here (default: a temporary directory)"
    )
    parser.add_argument("--only", help="comma-separated mechanisms (default: all)")
    parser.add_argument(
        "--analyse", metavar="DIR", help="only print the table of a past run"
    )
    args = parser.parse_args()
    if args.analyse:
        analyse(args.analyse)
        return
    root = Path(__file__).resolve().parent.parent
    peer = Path(os.environ["PEER"]) if os.environ.get("PEER") else build(root)
    mechanisms = args.only.split(",") if args.only else MECHANISMS
    out = args.out or tempfile.mkdtemp(prefix="waits-ablation-")
    Path(out).mkdir(parents=True, exist_ok=True)
    print(f"reports in {out}", file=sys.stderr)
    measure(peer, out, args.reps, mechanisms)
    analyse(out)


if __name__ == "__main__":
    main()
