"""The test suite. Importing it (pytest does, before any test module; so does ``python -m tests.stats.golden``)
pins the machine's floating-point arithmetic to one level, before numpy is imported.

The golden reports (``tests/stats/test_report_golden.py``) are compared to the bit, and a report's last bits
depend on the machine: OpenBLAS picks its kernels by CPU (Haswell on an AMD EPYC of AVX-512, SkylakeX on an Intel
one) and numpy runs AVX-512 loops where the CPU has them. The reports of the golden studies differed in up to 1.45e-8
(the reliability model's spread) between such machines, with the same code and libraries. Pinned to the AVX2 level,
every x86-64 machine with AVX2 and FMA computes the same bits. A variable already set is kept (to try another level).
"""

from __future__ import annotations

import os
import platform
import sys


def _pin_arithmetic() -> None:
    if "numpy" in sys.modules or platform.machine() not in ("x86_64", "AMD64"):
        return
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            flags = next((line.split(":", 1)[1].split() for line in handle if line.startswith("flags")), [])
    except OSError:
        return
    if "avx2" in flags and "fma" in flags:
        os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")
    if "avx512f" in flags:
        # numpy 2.4's names (X86_V4, AVX512_ICL, AVX512_SPR) and earlier ones'; a name numpy does not know is ignored
        os.environ.setdefault(
            "NPY_DISABLE_CPU_FEATURES",
            "X86_V4 AVX512_ICL AVX512_SPR AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX AVX512_CNL",
        )


_pin_arithmetic()
