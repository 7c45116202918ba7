"""Writes reference-output.npy as perf-serve's reference backend saves its output
(np.save of float32 [1, H, W, 3], backends/reference/common.py @ 7b798a32), and
reference-output.uint8, its pixels as perf-serve's media digest quantises them
(digests.py @ 7d4725ab § _to_uint8), for internal/wire's npy test; its sha256 is printed.
Run with the project venv's python: python internal/wire/testdata/reference_output.py"""

import hashlib
import pathlib

import numpy as np

here = pathlib.Path(__file__).parent
a = np.random.default_rng(3).random((1, 4, 5, 3), dtype=np.float32)
a[0, 0, 0] = [0.0, 1.0, 0.5]
a[0, 0, 1] = [1.2, -0.005, 0.998]  # clipped above; below -0.01 nowhere, so the range is [0, 1]
np.save(here / "reference-output.npy", a)
q = np.clip((np.clip(a, 0.0, 1.0) - 0.0) / (1.0 - 0.0) * 255.0 + 0.5, 0, 255).astype(np.uint8)
(here / "reference-output.uint8").write_bytes(q.tobytes())
print(hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())
