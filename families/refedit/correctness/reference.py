"""Independent float64 NumPy reference of the refedit edits.

This module re-implements families/refedit/README.md ("The edit, step by step") from the
text of the specification alone. Its constants are its own and are never read from a
bundle: the correctness case exists to catch a bundle (or a Go program) whose constants or
steps are wrong, so the reference must not share them.

It knows nothing about the refedit binary, the harness or pytest.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from PIL import Image

# The order of the README's edit table.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "grayscale": ("grayscale", "greyscale", "black and white", "monochrome"),
    "sepia": ("sepia", "vintage"),
    "invert": ("invert", "negative"),
    "contrast": ("contrast",),
    "warm": ("warm",),
    "brighten": ("brighten", "brighter", "lighten"),
    "posterize": ("posterize", "posterise"),
    "rotate": ("rotate", "upside down"),
    "mirror": ("mirror", "flip horizontally", "horizontal flip"),
    "flip": ("flip vertically", "vertical flip"),
    "blur": ("blur", "soften"),
    "sharpen": ("sharpen",),
    "pixelate": ("pixelate", "pixelize", "pixelise", "mosaic"),
    "grain": ("grain", "noise"),
}

EDITS: tuple[str, ...] = tuple(KEYWORDS)

# Remaps move pixels without changing values: they have no fp32 rounding at all.
REMAPS = frozenset({"rotate", "mirror", "flip"})

# A value of 4*x this close to an integer threshold is one that float32 and float64 may
# legitimately put on different sides of floor(); see Result.excused.
POSTERIZE_BOUNDARY_TOL = 1e-5

# A value whose unrounded level v*255+0.5 is this close (in levels) to an integer is one
# that float32 may round the other way: 0.02 levels is 8e-5 in [0, 1], far above the
# ~1e-6 that float32 accumulates over any edit here, and only ~4% of random values.
TIE_TOL_LEVELS = 0.02

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@dataclasses.dataclass(frozen=True)
class Constants:
    """The built-in edit parameters of the README, as this reference reads them.

    The selftest perturbs single fields to show that the thresholds catch a wrong constant.
    """

    gray: tuple[float, float, float] = (0.299, 0.587, 0.114)
    sepia: tuple[tuple[float, float, float], ...] = (
        (0.393, 0.769, 0.189),
        (0.349, 0.686, 0.168),
        (0.272, 0.534, 0.131),
    )
    contrast_gain: float = 1.5
    contrast_pivot: float = 0.5
    warm: tuple[float, float, float] = (1.15, 1.0, 0.80)
    gamma: float = 0.625
    posterize_levels: int = 4
    sharpen_amount: float = 1.0
    pixelate_block: int = 16
    grain_amplitude: float = 0.16


DEFAULT = Constants()


@dataclasses.dataclass
class Result:
    """One reference edit: the 8-bit output, the base image and what may differ from fp32.

    excused marks channel values (H x W x 3, bool) whose posterize level sits within
    POSTERIZE_BOUNDARY_TOL of a threshold: there a float32 program may take the neighbouring
    level, a whole step away. It is all False for every other edit.
    """

    edit: str
    output: np.ndarray  # H x W x 3 uint8
    base: np.ndarray  # H x W x 3 float64 in [0, 1]
    edited: np.ndarray  # H x W x 3 float64, op(base) before the guidance blend
    excused: np.ndarray  # H x W x 3 bool
    tie_distance: np.ndarray  # H x W x 3 float64: levels from the unrounded value to a rounding tie

    @property
    def near_tie(self) -> np.ndarray:
        """Values float32 may legitimately round to the neighbouring level (1 level away)."""
        return self.tie_distance < TIE_TOL_LEVELS


def match_edits(instruction: str) -> list[str]:
    """Every edit whose keyword is a case-insensitive substring of the instruction."""
    text = instruction.lower()
    return [edit for edit, words in KEYWORDS.items() if any(w in text for w in words)]


def select_edit(instruction: str) -> str:
    found = match_edits(instruction)
    if len(found) != 1:
        raise ValueError(f"instruction {instruction!r} matches {found or 'no edit'}, want exactly one")
    return found[0]


def decode(path: str | Path) -> np.ndarray:
    """Pixels as H x W x 3 uint8: the 8-bit non-premultiplied colour, alpha dropped.

    16-bit samples keep their high byte. Pillow decodes PNG exactly; JPEG decoders differ
    between libraries (Pillow's libjpeg vs Go's image/jpeg), so compare JPEG inputs loosely.
    """
    with Image.open(path) as im:
        im.load()
        mode = im.mode
        if mode == "RGB":
            # 48-bit PNGs open as RGB holding the high byte of each sample.
            arr = np.asarray(im, dtype=np.uint8)
        elif mode == "RGBA":
            arr = np.asarray(im, dtype=np.uint8)[..., :3]
        elif mode in ("L", "1"):
            arr = np.repeat(np.asarray(im.convert("L"), dtype=np.uint8)[..., None], 3, axis=2)
        elif mode == "LA":
            arr = np.repeat(np.asarray(im, dtype=np.uint8)[..., :1], 3, axis=2)
        elif mode in ("P", "PA"):
            arr = np.asarray(im.convert("RGBA"), dtype=np.uint8)[..., :3]
        elif mode in ("I;16", "I;16B", "I;16L", "I"):
            wide = np.asarray(im).astype(np.int64)
            if wide.min() < 0 or wide.max() > 0xFFFF:
                raise ValueError(f"{path}: mode {mode} holds values outside 16 bits")
            arr = np.repeat((wide >> 8).astype(np.uint8)[..., None], 3, axis=2)
        else:
            raise ValueError(f"{path}: image mode {mode} is not handled by the reference")
    return np.ascontiguousarray(arr)


def to_unit(pixels: np.ndarray, dtype=np.float64) -> np.ndarray:
    return pixels.astype(dtype) / dtype(255)


def _axis(n_in: int, n_out: int, dtype):
    i = np.arange(n_out, dtype=dtype)
    s = (i + dtype(0.5)) * dtype(n_in) / dtype(n_out) - dtype(0.5)
    s = np.clip(s, dtype(0), dtype(n_in - 1))
    i0 = np.floor(s).astype(np.intp)
    i1 = np.minimum(i0 + 1, n_in - 1)
    f = (s - i0.astype(dtype)).astype(dtype)
    return i0, i1, f


def resize(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bilinear with half-pixel centres, edge-clamped, as in README step 2."""
    in_h, in_w = img.shape[:2]
    if (in_w, in_h) == (width, height):
        return img.copy()
    dtype = img.dtype.type
    x0, x1, fx = _axis(in_w, width, dtype)
    y0, y1, fy = _axis(in_h, height, dtype)
    fx = fx[None, :, None]
    fy = fy[:, None, None]
    one = dtype(1)
    top = (one - fx) * img[y0][:, x0] + fx * img[y0][:, x1]
    bottom = (one - fx) * img[y1][:, x0] + fx * img[y1][:, x1]
    return ((one - fy) * top + fy * bottom).astype(dtype)


def _affine(img: np.ndarray, matrix, bias) -> np.ndarray:
    dtype = img.dtype.type
    m = np.asarray(matrix, dtype=dtype)
    b = np.asarray(bias, dtype=dtype)
    return (img @ m.T + b).astype(dtype)


def _blur_pass(img: np.ndarray) -> np.ndarray:
    dtype = img.dtype.type
    third = dtype(1) / dtype(3)
    p = np.pad(img, ((0, 0), (1, 1), (0, 0)), mode="edge")
    img = (p[:, :-2] + p[:, 1:-1] + p[:, 2:]) * third
    p = np.pad(img, ((1, 1), (0, 0), (0, 0)), mode="edge")
    return ((p[:-2] + p[1:-1] + p[2:]) * third).astype(dtype)


def box_blur(img: np.ndarray, passes: int) -> np.ndarray:
    for _ in range(passes):
        img = _blur_pass(img)
    return img


def block_mean(img: np.ndarray, block: int) -> np.ndarray:
    """Each block x block tile from the top-left (partial at the edges) replaced by its mean."""
    h, w = img.shape[:2]
    ys = np.arange(0, h, block)
    xs = np.arange(0, w, block)
    sums = np.add.reduceat(np.add.reduceat(img, ys, axis=0), xs, axis=1)
    bh = np.diff(np.append(ys, h))
    bw = np.diff(np.append(xs, w))
    means = sums / (bh[:, None, None] * bw[None, :, None]).astype(img.dtype)
    return np.repeat(np.repeat(means, bh, axis=0), bw, axis=1).astype(img.dtype)


def grain_noise(width: int, height: int, seed: int) -> np.ndarray:
    """u in [0, 1) for every pixel, H x W float64: the README's uint64 hash of k = y*W + x."""
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed {seed} is not a uint64")
    k = np.arange(width * height, dtype=np.uint64)
    s = np.uint64(seed)
    # Wrapping uint64 multiplication is the point of the hash, not an accident.
    with np.errstate(over="ignore"):
        z = s ^ (k * _GOLDEN)
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
    u = (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)
    return u.reshape(height, width)


def apply_op(edit: str, base: np.ndarray, steps: int, seed: int, c: Constants = DEFAULT) -> np.ndarray:
    """E = op(B) for one edit, in the dtype of base."""
    dtype = base.dtype.type
    if edit == "grayscale":
        return _affine(base, [c.gray] * 3, [0, 0, 0])
    if edit == "sepia":
        return _affine(base, c.sepia, [0, 0, 0])
    if edit == "invert":
        return _affine(base, -np.eye(3), [1, 1, 1])
    if edit == "contrast":
        g, p = c.contrast_gain, c.contrast_pivot
        return ((base - dtype(p)) * dtype(g) + dtype(p)).astype(dtype)
    if edit == "warm":
        return _affine(base, np.diag(c.warm), [0, 0, 0])
    if edit == "brighten":
        return np.power(base, dtype(c.gamma)).astype(dtype)
    if edit == "posterize":
        n = c.posterize_levels
        q = np.minimum(np.floor(base * dtype(n)), dtype(n - 1))
        return (q / dtype(n - 1)).astype(dtype)
    if edit == "rotate":
        return base[::-1, ::-1].copy()
    if edit == "mirror":
        return base[:, ::-1].copy()
    if edit == "flip":
        return base[::-1, :].copy()
    if edit == "blur":
        return box_blur(base, steps)
    if edit == "sharpen":
        return (base + dtype(c.sharpen_amount) * (base - box_blur(base, 1))).astype(dtype)
    if edit == "pixelate":
        return block_mean(base, c.pixelate_block)
    if edit == "grain":
        h, w = base.shape[:2]
        u = grain_noise(w, h, seed).astype(dtype)[..., None]
        return (base + dtype(c.grain_amplitude) * (u - dtype(0.5))).astype(dtype)
    raise ValueError(f"unknown edit {edit!r}")


def posterize_boundaries(base: np.ndarray, c: Constants = DEFAULT) -> np.ndarray:
    scaled = base.astype(np.float64) * c.posterize_levels
    nearest = np.rint(scaled)
    inner = (nearest >= 1) & (nearest <= c.posterize_levels - 1)
    return inner & (np.abs(scaled - nearest) < POSTERIZE_BOUNDARY_TOL)


def blend(base: np.ndarray, edited: np.ndarray, guidance: float) -> np.ndarray:
    dtype = base.dtype.type
    return (base + dtype(guidance) * (edited - base)).astype(dtype)


def unrounded_levels(img: np.ndarray) -> np.ndarray:
    return np.clip(img.astype(np.float64), 0.0, 1.0) * 255.0 + 0.5


def quantize(img: np.ndarray) -> np.ndarray:
    return np.floor(unrounded_levels(img)).astype(np.uint8)


def edit_pixels(
    pixels: np.ndarray,
    instruction: str,
    *,
    size: tuple[int, int] | None = None,
    num_inference_steps: int = 4,
    guidance_scale: float = 1.0,
    seed: int = 0,
    constants: Constants = DEFAULT,
    dtype=np.float64,
) -> Result:
    """The whole README pipeline on decoded H x W x 3 uint8 pixels.

    size is (width, height); None keeps the input size. dtype float32 emulates a float32
    program (used only by the selftest to show the thresholds tolerate fp32 rounding).
    """
    edit = select_edit(instruction)
    if not 0 < guidance_scale <= 3:
        raise ValueError(f"guidance_scale {guidance_scale} outside (0, 3]")
    if not 1 <= num_inference_steps <= 100:
        raise ValueError(f"num_inference_steps {num_inference_steps} outside 1..100")
    dtype = np.dtype(dtype).type
    img = to_unit(pixels, dtype)
    h, w = img.shape[:2]
    width, height = size if size is not None else (w, h)
    base = resize(img, width, height)
    edited = apply_op(edit, base, num_inference_steps, seed, constants)
    out = blend(base, edited, guidance_scale)
    if edit == "posterize":
        excused = posterize_boundaries(base, constants)
    else:
        excused = np.zeros(base.shape, dtype=bool)
    levels = unrounded_levels(out)
    return Result(
        edit=edit,
        output=np.floor(levels).astype(np.uint8),
        base=base,
        edited=edited,
        excused=excused,
        tie_distance=np.abs(levels - np.rint(levels)),
    )


def edit_file(path: str | Path, instruction: str, **settings) -> Result:
    return edit_pixels(decode(path), instruction, **settings)
