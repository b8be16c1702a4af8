"""A Python client that never closes its peers: it spawns `peer --role server` over a pipe and
over shared memory (shm-ring), calls both, prints `ready`, and goes on calling until it is
ended — by SIGKILL, or by SIGINT (KeyboardInterrupt, left uncaught).

    python leftover_client.py PEER
"""

import sys

import numpy as np

import peerpipe


def main() -> None:
    peer_exe = sys.argv[1]
    peers = [
        peerpipe.Peer.spawn(
            [peer_exe, "--role", "server", "--handler", "echo", "--transport", transport],
            transport=transport,
        )
        for transport in ("pipe", "shm-ring")
    ]
    x = np.arange(500.0)
    out = np.empty_like(x)
    calls = 0
    while True:
        for peer in peers:
            peer.call(x, out)
        calls += 1
        if calls == 10:
            print("ready", flush=True)


if __name__ == "__main__":
    main()
