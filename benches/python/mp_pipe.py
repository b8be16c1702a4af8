"""Python's multiprocessing.Pipe round trip of 500 doubles with numpy conversion, the
comparison the latency report issue quotes (~115 us on this machine class).

Run: python3 benches/python/mp_pipe.py [elements] [iterations]
Prints: elements=.. iterations=.. p50_ns=.. p99_ns=..

The child receives bytes, converts them to a float64 array (numpy.frombuffer), converts back
(tobytes) and sends them; the parent does the same around each round trip, as a simulation
exchanging a state vector would.
"""

import multiprocessing as mp
import sys
import time

import numpy as np


def echo(conn):
    while True:
        data = conn.recv_bytes()
        if not data:
            return
        values = np.frombuffer(data, dtype="<f8")
        conn.send_bytes(values.astype("<f8").tobytes())


def main():
    elements = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    parent, child = mp.Pipe()
    proc = mp.Process(target=echo, args=(child,))
    proc.start()
    state = np.linspace(-1.0, 1.0, elements)
    samples = []
    for i in range(iterations + iterations // 10):
        start = time.perf_counter_ns()
        parent.send_bytes(state.astype("<f8").tobytes())
        reply = np.frombuffer(parent.recv_bytes(), dtype="<f8")
        end = time.perf_counter_ns()
        if i >= iterations // 10:
            samples.append(end - start)
    assert np.array_equal(reply, state)
    parent.send_bytes(b"")
    proc.join()
    samples.sort()
    print(f"elements={elements} iterations={iterations} p50_ns={samples[len(samples) // 2]} "
          f"p99_ns={samples[len(samples) * 99 // 100]}")


if __name__ == "__main__":
    main()
