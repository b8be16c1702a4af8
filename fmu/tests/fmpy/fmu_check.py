"""FMPy against the proxy FMUs of `peer fmu wrap`: the fixtures built, results compared bit
for bit with the original in process, several instances at once, a server killed or stalled,
and an importer killed while its servers run. Driven by fmu/tests/fmpy.rs; each command exits
non-zero with a message when its check fails.

    python3 fmu_check.py build-c OUT.fmu
    python3 fmu_check.py build-c3 OUT.fmu
    python3 fmu_check.py build-python OUT_DIR
    python3 fmu_check.py compare ORIGINAL.fmu PROXY.fmu
    python3 fmu_check.py instances ORIGINAL.fmu PROXY.fmu N
    python3 fmu_check.py kill PROXY.fmu
    python3 fmu_check.py stall PROXY.fmu
    python3 fmu_check.py hold PROXY.fmu N
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import numpy as np
from fmpy import extract, instantiate_fmu, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException

HERE = Path(__file__).resolve().parent

# The runs compared: the C FMU with an input signal (a set before every step) and a
# parameter; the Python FMU with a parameter.
RUNS = {
    "decay": {"start_values": {"k": 0.7}, "stop_time": 5.0, "step_size": 0.01},
    "Integrator": {"start_values": {"w": 3.0}, "stop_time": 5.0, "step_size": 0.01},
    "decay3": {"start_values": {"k": 0.7}, "stop_time": 5.0, "step_size": 0.01},
}


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def build_c(out, name="decay", platform="linux64"):
    """A C FMU: NAME.c compiled against the FMI headers FMPy ships."""
    import fmpy

    headers = Path(fmpy.__file__).parent / "c-code"
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / f"{name}.so"
        sources = [str(HERE / f"{name}.c")]
        if platform != "linux64":
            rest = Path(tmp) / "unsupported.c"
            rest.write_text(unsupported_fmi3(headers, (HERE / f"{name}.c").read_text()))
            sources.append(str(rest))
        cc = os.environ.get("CC", "cc")
        command = [cc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", f"-I{headers}",
                   *sources, "-o", str(binary), "-lm"]
        subprocess.run(command, check=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as fmu:
            fmu.write(HERE / f"{name}.xml", "modelDescription.xml")
            fmu.write(binary, f"binaries/{platform}/{name}.so")
            fmu.write(HERE / f"{name}.c", f"sources/{name}.c")


def unsupported_fmi3(headers, defined):
    """C definitions of the FMI 3.0 functions `defined` lacks, each returning fmi3Error (or
    NULL): FMI 3.0 has a binary export every function, and importers look them all up."""
    import re

    types = (headers / "fmi3FunctionTypes.h").read_text()
    out = ['#include <stddef.h>', '#include "fmi3Functions.h"']
    for ret, name, params in re.findall(r"typedef\s+(\w+)\s+(fmi3\w+)TYPE\s*\(([^;]*)\);", types):
        if re.search(rf"^\S[^\n]*\b{name}\(", defined, re.M):
            continue
        params = re.sub(r"/\*.*?\*/", "", params, flags=re.S)
        body = {"fmi3Status": "return fmi3Error;", "fmi3Instance": "return NULL;"}.get(ret, "")
        out.append(f"{ret} {name}({params}) {{ {body} }}")
    return "\n".join(out) + "\n"


def build_python(out_dir):
    """The pythonfmu FMU: Integrator.py built offline."""
    subprocess.run([sys.executable, "-m", "pythonfmu", "build", "-f", str(HERE / "Integrator.py"),
                    "-d", str(out_dir)], check=True, stdout=subprocess.DEVNULL)


def input_signal(name):
    if name not in ("decay", "decay3"):
        return None
    t = np.linspace(0.0, 5.0, 51)
    return np.array(list(zip(t, np.sin(3 * t))), dtype=[("time", np.float64), ("u", np.float64)])


def simulate(path, logger=None, debug=False):
    name = read_model_description(path).coSimulation.modelIdentifier
    run = RUNS[name]
    outputs = [v.name for v in read_model_description(path).modelVariables
               if v.causality == "output"]
    return simulate_fmu(str(path), fmi_type="CoSimulation", output=outputs,
                        input=input_signal(name), logger=logger, debug_logging=debug, **run)


def compare(original, proxy):
    inside = simulate(original)
    messages = []

    def logger(*args):  # FMI 2.0: env, name, status, category, message; 3.0: no name
        status, category, message = args[-3:]
        messages.append((status, category.decode(), message.decode()))

    through = simulate(proxy, logger=logger, debug=True)
    if inside.dtype != through.dtype or inside.tobytes() != through.tobytes():
        diff = [n for n in inside.dtype.names if inside[n].tobytes() != through[n].tobytes()]
        fail(f"{proxy}: results differ from the original's in process in {diff}")
    if len(inside) < 500 or np.all(inside[inside.dtype.names[1]] == inside[inside.dtype.names[1]][0]):
        fail("the run compared is trivial")
    print(f"{Path(original).name}: {len(inside)} rows x {len(inside.dtype.names)} columns bit-identical")
    if read_model_description(original).coSimulation.modelIdentifier in ("decay", "decay3"):
        # The FMU's messages reach FMPy's logger, formatted: instantiation in another
        # process, and every 50th step.
        texts = [m for _, _, m in messages]
        instantiated = [m for m in texts if m.startswith("instantiated ")]
        if not instantiated or f" process {os.getpid()} " in instantiated[0] + " ":
            fail(f"no instantiation message from another process in {texts[:5]}")
        print(f"logger: {instantiated[0]!r}")
        steps = [m for m in texts if m.startswith("step 50 done at t=0.5")]
        if not steps:
            fail(f"no formatted step message in {texts[:5]}")
        print(f"logger: {len(messages)} messages, e.g. {steps[0]!r}")


def instances(original, proxy, count):
    # In process, a second instance is refused.
    unzipped = extract(original)
    try:
        md = read_model_description(unzipped)
        first = instantiate_fmu(unzipped, md, fmi_type="CoSimulation")
        try:
            instantiate_fmu(unzipped, md, fmi_type="CoSimulation")
            fail("the original FMU was instantiated twice in one process")
        except Exception as e:  # noqa: BLE001 - FMPy raises a plain Exception here
            print(f"in process, a second instance fails: {type(e).__name__}")
        first.freeInstance()
    finally:
        shutil.rmtree(unzipped, ignore_errors=True)
    expected = simulate(original).tobytes()
    results, errors = [None] * count, []

    def run(i):
        try:
            results[i] = simulate(proxy).tobytes()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors or any(r != expected for r in results):
        fail(f"{count} instances at once: errors {errors}, identical "
             f"{[r == expected for r in results]}")
    print(f"{count} instances at once through the proxy, each bit-identical "
          f"({time.perf_counter() - started:.2f} s)")


def children():
    """The pids of this process's children."""
    pids = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(p) for p in (task / "children").read_text().split())
    return pids


def set_real(fmu, vrs, values):
    (fmu.setReal if hasattr(fmu, "setReal") else fmu.setFloat64)(vrs, values)


def get_real(fmu, vrs):
    return (fmu.getReal if hasattr(fmu, "getReal") else fmu.getFloat64)(vrs)


def unpacked_by(pid):
    """What server `pid` left of its unpacked FMU in the temporary directory."""
    return list(Path(tempfile.gettempdir()).glob(f"peerpipe-fmu-{pid}-*"))


def open_proxy(proxy, messages):
    unzipped = extract(proxy)
    md = read_model_description(unzipped)

    def logger(*args):  # FMI 2.0: env, name, status, category, message; 3.0: no name
        status, _category, message = args[-3:]
        messages.append((status, message.decode()))

    fmu = instantiate_fmu(unzipped, md, fmi_type="CoSimulation", logger=logger)
    if md.fmiVersion == "2.0":
        fmu.setupExperiment(startTime=0.0)
        fmu.enterInitializationMode()
    else:
        fmu.enterInitializationMode(startTime=0.0)
    fmu.exitInitializationMode()
    for i in range(10):
        fmu.doStep(currentCommunicationPoint=i * 0.01, communicationStepSize=0.01)
    return fmu, unzipped


def expect_failure(fmu, messages, limit, what):
    started = time.perf_counter()
    try:
        fmu.doStep(currentCommunicationPoint=0.1, communicationStepSize=0.01)
        fail(f"a step after the server was {what} succeeded")
    except FMICallException as e:
        elapsed = time.perf_counter() - started
        if e.status not in (3, 4):
            fail(f"status {e.status}, not fmi2Error or fmi2Fatal")
        errors = [m for s, m in messages if s >= 3]
        if not errors:
            fail(f"no error message reached the logger: {messages}")
        if elapsed > limit:
            fail(f"the failure took {elapsed:.2f} s, more than {limit} s")
        print(f"{what} server: doStep returned {e.status} after {elapsed * 1e3:.0f} ms, "
              f"logged {errors[0]!r}")
    try:
        get_real(fmu, [0])
        fail("a get after the failure succeeded")
    except FMICallException:
        pass


def kill(proxy):
    messages = []
    before = children()
    fmu, unzipped = open_proxy(proxy, messages)
    try:
        set_real(fmu, [99], [1.0])
        fail("a set of an unknown value reference succeeded")
    except FMICallException as e:
        if not any("unknown value reference 99" in m for _, m in messages):
            fail(f"no message about the unknown reference: {messages}")
        print(f"unknown value reference: status {e.status}, {messages[-1][1]!r}")
    messages.clear()
    servers = children() - before
    if len(servers) != 1:
        fail(f"expected one server, found {servers}")
    server = servers.pop()
    os.kill(server, signal.SIGKILL)
    expect_failure(fmu, messages, 5.0, "killed")
    fmu.freeInstance()
    shutil.rmtree(unzipped, ignore_errors=True)
    if children() - before or unpacked_by(server):
        fail(f"left: processes {children() - before}, files {unpacked_by(server)}")


def stall(proxy):
    messages = []
    before = children()
    fmu, unzipped = open_proxy(proxy, messages)
    servers = children() - before
    fmu.setInteger([7], [1])  # hang=1: the next step never ends
    timeout = float(os.environ["PEERPIPE_FMU_TIMEOUT"].rstrip("s"))
    expect_failure(fmu, messages, timeout + 3.0, "stalled")
    fmu.freeInstance()
    shutil.rmtree(unzipped, ignore_errors=True)
    deadline = time.monotonic() + 5
    left = []
    while time.monotonic() < deadline:
        left = list(children() - before) + [f for s in servers for f in unpacked_by(s)]
        if not left:
            break
        time.sleep(0.05)
    if left:
        fail(f"left: {left}")


def hold(proxy, count):
    """Instances mid-run, the last one's server inside a step that never ends, then waits to
    be killed."""
    held = [open_proxy(proxy, []) for _ in range(count)]
    stuck = held[-1][0]
    stuck.setInteger([7], [1])  # hang=1
    threading.Thread(target=stuck.doStep, args=(0.1, 0.01), daemon=True).start()
    time.sleep(0.3)
    Path(os.environ["FMU_CHECK_READY"]).write_text(f"{len(held)} {sorted(children())}")
    time.sleep(600)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "build-c":
        build_c(args[0])
    elif command == "build-c3":
        build_c(args[0], "decay3", "x86_64-linux")
    elif command == "build-python":
        build_python(args[0])
    elif command == "compare":
        compare(args[0], args[1])
    elif command == "instances":
        instances(args[0], args[1], int(args[2]))
    elif command == "kill":
        kill(args[0])
    elif command == "stall":
        stall(args[0])
    elif command == "hold":
        hold(args[0], int(args[1]))
    else:
        fail(f"unknown command {command}")


if __name__ == "__main__":
    main()
