"""The README's Python quick start runs as it stands: its `model.py` written to a folder, its
client run there with this Python (the installed package), the client's own assert checking
the reply."""

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def quick_start() -> tuple:
    """The two Python blocks of the README's "Quick start": model.py, then the client."""
    text = README.read_text()
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 2, f"expected model.py and a client in the quick start, got {blocks}"
    model, client = blocks
    assert model.startswith("# model.py\n"), model
    return model, client


def test_the_readme_quick_start_runs_and_its_model_answers_in_another_process(tmp_path):
    model, client = quick_start()
    (tmp_path / "model.py").write_text(model)
    done = subprocess.run(
        [sys.executable, "-c", client],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "CallTiming(round_trip_ns=" in done.stdout, done.stdout


def test_the_quick_start_fails_loudly_when_its_model_is_missing(tmp_path):
    # The same client without model.py beside it: the spawn's error, not a silent pass.
    _, client = quick_start()
    done = subprocess.run(
        [sys.executable, "-c", client],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "peerpipe.PeerExited" in done.stderr or "model.py" in done.stderr, done.stderr
