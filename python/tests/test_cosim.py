"""peerpipe.Session: a server whose loop is the caller's, and the heat rod of
python/examples/heat_rod.py split across two processes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import python_server

import peerpipe

HEAT_ROD = Path(__file__).resolve().parents[1] / "examples" / "heat_rod.py"


def test_the_heat_rod_split_in_two_is_bit_identical_to_one_process():
    out = subprocess.run(
        [sys.executable, str(HEAT_ROD), "--cells", "40", "--steps", "2000", "--blocks", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    figures = json.loads(out.stdout.splitlines()[-1])
    assert figures["identical"] is True
    assert figures["steps"] == 2000
    # Every figure is a p50 and is printed with what it is, the break-even of splitting too.
    for key in ["step", "exchange", "compute", "compute_alone", "server_compute", "ping"]:
        assert figures[f"{key}_p50_ns"] > 0, key
    assert figures["split_pays_above_ns"] == 2 * figures["exchange_p50_ns"]
    assert figures["split_pays"] == (figures["step_p50_ns"] < figures["one_process_p50_ns"])
    for said in ["p50s over steps", "this half alone", "splitting pays above", "one process"]:
        assert said in out.stdout, said


def test_a_session_answers_in_its_own_loop_and_refuses_what_is_out_of_turn():
    with peerpipe.Peer.spawn(python_server("session_server")) as peer:
        time.sleep(0.2)  # the server waits in slices meanwhile
        assert peer.functions == ["f"]
        (timeouts,) = peer.call_parts("f", np.array([3.0]))
        assert timeouts[0] >= 1, "recv(timeout=...) raised Timeout and the stream stayed in step"
        (doubled,) = peer.call_parts("f", np.array([1.5, 4.0]))
        assert doubled.tolist() == [3.0, 8.0]
        with pytest.raises(peerpipe.RemoteError, match="not answered yet"):
            peer.call_parts("f", np.array([1.0]))
        with pytest.raises(peerpipe.RemoteError, match="at most"):
            peer.call_parts("f", np.array([2.0]))
        with pytest.raises(peerpipe.RemoteError, match='unknown function "g": this server has f'):
            peer.call_parts("g", np.array([1.0]))
        with pytest.raises(peerpipe.RemoteError, match="serves functions by name"):
            peer.call(np.array([1.0]))
        (doubled,) = peer.call_parts("f", np.array([5.0]))
        assert doubled[0] == 10.0


def test_bad_functions_are_refused_before_stdio_is_touched():
    with pytest.raises(TypeError, match="list of names"):
        peerpipe.Session("exchange")
    with pytest.raises(ValueError, match="function name"):
        peerpipe.Session(["a b"])
    with pytest.raises(ValueError, match="named twice"):
        peerpipe.Session(["f", "f"])


def test_a_killed_server_half_is_peer_exited_for_the_client():
    server = [sys.executable, str(HEAT_ROD), "--serve", "--cells", "10"]
    with peerpipe.Peer.spawn(server, timeout=5.0) as peer:
        theirs = np.empty(1)
        peer.call_parts("exchange", np.array([0.5]), out=(theirs,))
        os.kill(peer.server_pid, signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(peerpipe.PeerExited):
            for _ in range(100):
                peer.call_parts("exchange", np.array([0.5]), out=(theirs,))
        assert time.monotonic() - started < 5


def test_a_killed_client_half_ends_its_servers_session():
    client = subprocess.Popen(
        [sys.executable, str(HEAT_ROD), "--cells", "10", "--steps", "100000000", "--blocks", "1"],
        stdout=subprocess.DEVNULL,
    )
    try:
        server = None
        for _ in range(500):
            try:
                with open(f"/proc/{client.pid}/task/{client.pid}/children") as f:
                    server = int(f.read().split()[0])
                break
            except (OSError, IndexError):
                time.sleep(0.01)
        assert server is not None, "the client spawned its server"
        time.sleep(0.2)
    finally:
        client.kill()
        client.wait()
    for _ in range(500):
        if not os.path.exists(f"/proc/{server}"):
            break
        time.sleep(0.01)
    assert not os.path.exists(f"/proc/{server}"), "the server outlived its killed client"
