"""How long Ctrl-C takes to interrupt a call that waits for a slow server, and what it leaves.

    python python/bench/interrupt.py [trials]

Each trial spawns python/tests/servers/slow_server.py (60 s per reply), calls it, sends this
process SIGINT from a timer thread 0.2-0.4 s later, and measures from the signal to the
KeyboardInterrupt (which includes terminating and reaping the server). Prints median and max.
"""

import os
import random
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

import peerpipe

SERVER = Path(__file__).resolve().parents[1] / "tests" / "servers" / "slow_server.py"


def trial():
    peer = peerpipe.Peer.spawn([sys.executable, str(SERVER), "60"])
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(random.uniform(0.2, 0.4), interrupt)
    timer.start()
    try:
        peer.call(np.ones(500))
    except KeyboardInterrupt:
        latency = time.perf_counter() - sent[0]
    assert peer.closed
    return latency


def main():
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    latencies = sorted(trial() for _ in range(trials))
    print(
        f"Ctrl-C to KeyboardInterrupt over {trials} trials: median "
        f"{statistics.median(latencies) * 1e3:.1f} ms, min {latencies[0] * 1e3:.1f} ms, "
        f"max {latencies[-1] * 1e3:.1f} ms (peer closed, server reaped each time)"
    )


if __name__ == "__main__":
    main()
