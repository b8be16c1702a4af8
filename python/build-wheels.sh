#!/usr/bin/env bash
# Builds peerpipe's two wheels into DIR (default: dist), for installing with pip where there is
# no Rust toolchain:
#   peerpipe-VERSION-cp310-abi3-PLATFORM.whl   the Python package: one wheel for every CPython >= 3.10
#   peerpipe_cli-VERSION-py3-none-PLATFORM.whl the `peer` binary, installed into the environment's bin/
# PLATFORM is manylinux_2_X_x86_64 (or aarch64, built there), where 2.X is the oldest glibc the
# wheels run on, as maturin finds it from the symbols they use. Needs, on the building machine
# only, cargo and maturin (pip install 'maturin>=1.9,<2').
#
#   bash python/build-wheels.sh [DIR]
#   pip install DIR/peerpipe-*.whl DIR/peerpipe_cli-*.whl
set -euo pipefail
out=$(realpath -m "${1:-dist}")
cd "$(dirname "$0")/.."
if ! command -v maturin >/dev/null 2>&1; then
    echo "build-wheels.sh: maturin not found: pip install 'maturin>=1.9,<2'" >&2
    exit 2
fi
maturin build --release --manifest-path python/Cargo.toml --out "$out"
maturin build --release --manifest-path cli/Cargo.toml --out "$out"
ls -l "$out"
