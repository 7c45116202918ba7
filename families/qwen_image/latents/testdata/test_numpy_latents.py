"""The noise TRTMC's latent replay draws, computed by NumPy itself, for qualkit's Go
port (families/qwen_image/latents) to match bit for bit.

perf-serve's latents.py @ d3e1a549 (`noise`) and the families layout's correctness case
(families/qwen_image/tests/test_e2e.py @ 9777fef7 § _initial_latents) both draw
numpy.random.default_rng(seed).standard_normal(shape, dtype=numpy.float32). golden.json
holds the sha256 of those raw float32 bytes for a few seeds and shapes; the Go test reads
it, and this file's test holds it to NumPy. Regenerate with
`python families/qwen_image/latents/testdata/test_numpy_latents.py --write` (run by `make pytest`
without the flag).
"""

import hashlib
import json
import pathlib
import sys

import numpy as np

GOLDEN = pathlib.Path(__file__).with_name("golden.json")

# (seed, shape): the Qwen-Image edit latents at 1024x1024 as perf-serve shapes them
# (1, 1, 16, 128, 128) and as the case does (16, 128, 128), the smoke sizes, TRTMC's own
# replay seeds (1000 + index), and long runs that reach the tail and rejection branches.
CASES = [
    (42, [1, 1, 16, 128, 128]),
    (42, [16, 128, 128]),
    (42, [1, 1, 16, 64, 64]),
    (0, [4000000]),
    (7, [4000000]),
    (1000, [1, 1, 16, 128, 128]),
    (1001, [1, 1, 16, 128, 128]),
    (4294967296, [1000]),
    (18446744073709551615, [1000]),
]


def digest(seed, shape):
    values = np.random.default_rng(seed).standard_normal(tuple(shape), dtype=np.float32)
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def table():
    return [{"seed": seed, "shape": shape, "sha256": digest(seed, shape)} for seed, shape in CASES]


def test_golden_is_numpys():
    assert json.loads(GOLDEN.read_text()) == table()


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        GOLDEN.write_text(json.dumps(table(), indent=1) + "\n")
    else:
        print(json.dumps(table(), indent=1))
