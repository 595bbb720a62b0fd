"""`verify` compares computed figures within 1e-6 (relative, at least absolute), the data to the bit: a certificate
made on a machine whose BLAS kernels round differently verifies, with one note saying how many figures agree only to
1e-6 (docs/VERDICT.md, Certificates); a figure edited beyond that is still a difference."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from tests.support import copy_demo, run_cli_process

NOTE = re.compile(r"note: (\d+) number\(s\) agree with the certificate's to 1e-06 but not to the last bit")


@pytest.fixture(scope="module")
def demo_certificate(demo_original, tmp_path_factory) -> tuple[Path, Path]:
    """(study, certificate): the demo study certified in this process (the same arithmetic as the tests' verify)."""
    from tui_rater.cli import main

    folder = tmp_path_factory.mktemp("tolerance")
    db = copy_demo(demo_original, folder)
    cert = folder / "demo.cert.json"
    assert main(["certify", "--db", str(db), "--out", str(cert)]) == 0
    return db, cert


def _env(folder: Path, coretype: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUI_RATER_")}
    env["XDG_CONFIG_HOME"] = str(folder / "config")
    env["HOME"] = str(folder)
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def _edited(cert: Path, out: Path, factor: float) -> tuple[str, float, float]:
    """The certificate with one report figure (a Pearson r, |r| > 0.1) multiplied by ``factor``, written to ``out``,
    otherwise the same valid certificate; returns the figure's key, old and new value."""
    document = json.loads(cert.read_text())
    numbers = document["tasks"]["hanna"]["numbers"]
    key = next(
        k
        for k, n in sorted(numbers.items())
        if k.startswith("table2|") and isinstance(n["value"], float) and abs(n["value"]) > 0.1
    )
    old = numbers[key]["value"]
    numbers[key]["value"] = old * factor
    assert numbers[key]["value"] != old
    out.write_text(json.dumps(document))
    return key, old, numbers[key]["value"]


def test_a_figure_off_by_1e_9_is_a_note_and_off_by_1e_3_a_difference(demo_certificate, cli, tmp_path):
    """Through the CLI: the untouched certificate matches to the bit (no note); one figure edited by a relative 1e-9
    verifies (exit 0) with the note counting it; edited by a relative 1e-3 it is a difference (exit 1)."""
    db, cert = demo_certificate
    code, out, err = cli("verify", cert, "--db", db)
    assert code == 0, out + err
    assert "matches" in out and "differs" not in out
    assert not NOTE.search(out), out  # the normal case: every figure to the bit

    near = tmp_path / "near.cert.json"
    key, old, new = _edited(cert, near, 1 + 1e-9)
    code, out, err = cli("verify", near, "--db", db)
    assert code == 0, out + err
    assert "differs" not in out and "matches" in out
    assert NOTE.findall(out) == ["1"], out
    assert f"number {key!r} value" in out and f"largest difference {abs(new - old):.3g}" in out

    far = tmp_path / "far.cert.json"
    key, _, _ = _edited(cert, far, 1 + 1e-3)
    code, out, _ = cli("verify", far, "--db", db)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("differs: ")]
    assert len(lines) == 1 and f"number {key!r}: value is" in lines[0], out
    assert not NOTE.search(out)


def _avx512() -> bool:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(line.startswith("flags") and "avx512f" in line.split() for line in text.splitlines())


def _floats(document: dict) -> list[float]:
    """Every report figure's fields of every task, in one order."""
    found = []
    for task in sorted(document["tasks"]):
        numbers = document["tasks"][task]["numbers"]
        for key in sorted(numbers):
            found += [numbers[key][f] for f in ("value", "p", "ci_low", "ci_high")]
    return found


@pytest.mark.skipif(not _avx512(), reason="OpenBLAS's SkylakeX kernels need AVX-512 (avx512f)")
def test_a_certificate_made_with_skylakex_kernels_verifies_with_haswell_ones(demo_original, tmp_path):
    """The cross-machine case for real: OpenBLAS on an Intel AVX-512 machine runs its SkylakeX kernels, on AMD or
    AVX2 its Haswell ones, and the demo's Pearson r, p-values and reliability figures differ in their last bits."""
    db = copy_demo(demo_original, tmp_path)
    certs = {}
    for coretype in ("SkylakeX", "Haswell"):
        certs[coretype] = tmp_path / f"{coretype}.cert.json"
        done = run_cli_process("certify", "--db", db, "--out", certs[coretype], env=_env(tmp_path, coretype))
        assert done.returncode == 0, done.stderr
    skylake, haswell = (json.loads(certs[c].read_text()) for c in ("SkylakeX", "Haswell"))
    # the two machines' certificates really differ in figures' bits (and only there: the data's digests agree)
    differing = [
        (a, b)
        for a, b in zip(_floats(skylake), _floats(haswell), strict=True)
        if isinstance(a, float) and np.float64(a).tobytes() != np.float64(b).tobytes()
    ]
    assert len(differing) > 10
    assert max(abs(a - b) for a, b in differing) < 1e-6
    assert all(skylake["tasks"][t]["tables"] == haswell["tasks"][t]["tables"] for t in skylake["tasks"])
    done = run_cli_process("verify", certs["SkylakeX"], "--db", db, env=_env(tmp_path, "Haswell"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "differs" not in done.stdout and "matches" in done.stdout
    counted = NOTE.findall(done.stdout)
    assert len(counted) == 1 and int(counted[0]) >= len(differing), done.stdout
    # on the machine that made it, the same certificate matches to the bit: no note
    done = run_cli_process("verify", certs["SkylakeX"], "--db", db, env=_env(tmp_path, "SkylakeX"))
    assert done.returncode == 0 and not NOTE.search(done.stdout), done.stdout + done.stderr
