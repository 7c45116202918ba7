"""The inputs and the case table of the refedit correctness case.

Inputs are synthetic and made in code (no files to pin): gradients, checkerboards, coloured
shapes, a hash texture, in a few sizes and PNG colour types (RGB, RGBA with transparent
pixels, 8-bit grey, palette, 48-bit RGB). Every input is asymmetric, so no remap is an
identity. PNG only: PNG decodes bit-exactly everywhere, JPEG does not.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

import reference


def _hash_texture(width: int, height: int, salt: int) -> np.ndarray:
    """H x W x 3 uint8 pseudo-noise from a fixed integer hash (stable across NumPy versions)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.uint64)
    out = np.empty((height, width, 3), dtype=np.uint8)
    with np.errstate(over="ignore"):
        for ch in range(3):
            z = (y * np.uint64(73856093)) ^ (x * np.uint64(19349663)) ^ np.uint64(salt * 3 + ch + 1)
            z = (z ^ (z >> np.uint64(13))) * np.uint64(0x5BD1E995)
            z = z ^ (z >> np.uint64(15))
            out[..., ch] = (z & np.uint64(0xFF)).astype(np.uint8)
    return out


def shapes(width: int = 96, height: int = 64) -> np.ndarray:
    """Gradient background, saturated shapes, a bright patch, a noisy patch: every edit shows."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = np.empty((height, width, 3), dtype=np.float64)
    img[..., 0] = 40 + 180 * x / (width - 1)
    img[..., 1] = 30 + 150 * y / (height - 1)
    img[..., 2] = 200 - 120 * (x + y) / (width + height - 2)
    cx, cy, r = width * 0.28, height * 0.38, min(width, height) * 0.22
    img[(x - cx) ** 2 + (y - cy) ** 2 <= r * r] = (230, 30, 40)
    img[int(height * 0.55) : int(height * 0.9), int(width * 0.55) : int(width * 0.8)] = (20, 60, 235)
    img[y > height - 1 - (x - width * 0.1) * 0.5] = (40, 200, 60)  # a green wedge, bottom left
    img[2:12, width - 22 : width - 4] = (252, 246, 236)  # bright: sepia/warm go past 1
    noisy = _hash_texture(20, 14, salt=1).astype(np.float64)
    img[height - 16 : height - 2, width - 22 : width - 2] = noisy
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def gradient(width: int = 64, height: int = 48) -> np.ndarray:
    """Smooth ramps over the whole 0..255 range: posterize thresholds and resize weights."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    img = np.stack(
        [255 * x / (width - 1), 255 * y / (height - 1), 255 * (1 - (x / (width - 1)) * (y / (height - 1)))],
        axis=-1,
    )
    img[: height // 4, : width // 3] = (250, 120, 10)  # breaks the symmetry of the ramps
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def checker(size: int = 40, cell: int = 4) -> np.ndarray:
    """Two-colour checkerboard with a 1-pixel checker quadrant: blur and sharpen are loud here."""
    y, x = np.mgrid[0:size, 0:size]
    coarse = ((x // cell) + (y // cell)) % 2 == 0
    fine = (x + y) % 2 == 0
    pick = np.where((x >= size // 2) & (y < size // 2), fine, coarse)
    img = np.where(pick[..., None], np.array([235, 220, 40]), np.array([30, 20, 120]))
    img[size - 6 :, : size // 3] = (200, 30, 30)
    return img.astype(np.uint8)


def odd(width: int = 37, height: int = 23) -> np.ndarray:
    """Odd sizes (partial 16x16 blocks) full of hash noise."""
    return _hash_texture(width, height, salt=7)


def alpha(width: int = 32, height: int = 24) -> np.ndarray:
    """RGBA whose alpha runs from 0 to 255: the colour must survive alpha 0 (no compositing)."""
    y, x = np.mgrid[0:height, 0:width]
    rgba = np.empty((height, width, 4), dtype=np.uint8)
    rgba[..., 0] = (x * 255 // (width - 1)).astype(np.uint8)
    rgba[..., 1] = 180
    rgba[..., 2] = (y * 255 // (height - 1)).astype(np.uint8)
    rgba[..., 3] = ((x + y) * 255 // (width + height - 2)).astype(np.uint8)
    rgba[:4, :6, 3] = 0
    return rgba


def grey(width: int = 20, height: int = 30) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width]
    v = (x * 11 + y * 5) % 256
    v[y < x // 2] = 250
    return v.astype(np.uint8)


def palette_image(width: int = 24, height: int = 24) -> Image.Image:
    y, x = np.mgrid[0:height, 0:width]
    index = ((x // 3) + 2 * (y // 4)) % 12
    index[:5, :9] = 11
    im = Image.frombytes("P", (width, height), index.astype(np.uint8).tobytes())
    colours = [(15 * i + 20, 255 - 19 * i, (97 * i) % 256) for i in range(12)]
    im.putpalette([c for rgb in colours for c in rgb])
    return im


def rgb48(width: int = 30, height: int = 20) -> np.ndarray:
    """H x W x 3 uint16 whose low bytes are noise: a decoder must use the high byte."""
    y, x = np.mgrid[0:height, 0:width].astype(np.uint32)
    high = np.stack([x * 8, y * 12, 255 - x * 4 - y * 3], axis=-1).clip(0, 255).astype(np.uint32)
    high[:3, :7] = (240, 10, 90)
    low = _hash_texture(width, height, salt=3).astype(np.uint32)
    return (high << 8 | low).astype(np.uint16)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_png48(path: Path, pixels: np.ndarray) -> None:
    """A 16-bit-per-sample RGB PNG (Pillow cannot write one)."""
    h, w, _ = pixels.shape
    rows = pixels.astype(">u2").reshape(h, w * 6 // 2).view(np.uint8).reshape(h, w * 6)
    raw = b"".join(b"\x00" + rows[i].tobytes() for i in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")
    path.write_bytes(data)


# The fixture photo of the benchmark's first pair (fixtures/image_edit/manifest.json,
# "photo-grayscale"): the case edits it as the benchmark does, so that the quality stage
# can hold the server's output of that pair to this case's reference image.
PAIR_PHOTO = Path(__file__).resolve().parents[3] / "fixtures" / "images" / "photo-640x382.png"


def write_inputs(directory: Path) -> dict[str, Path]:
    """Write every input PNG into directory; return name -> path."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    pair = directory / "photo_640x382.png"
    pair.write_bytes(PAIR_PHOTO.read_bytes())  # the fixture's exact bytes
    paths["photo_640x382"] = pair

    def save(name: str, im: Image.Image) -> None:
        p = directory / f"{name}.png"
        im.save(p, format="PNG")
        paths[name] = p

    save("shapes_96x64", Image.fromarray(shapes()))
    save("gradient_64x48", Image.fromarray(gradient()))
    save("checker_40x40", Image.fromarray(checker()))
    save("odd_37x23", Image.fromarray(odd()))
    save("alpha_32x24", Image.fromarray(alpha()))
    save("grey_20x30", Image.fromarray(grey()))
    save("palette_24x24", palette_image())
    p = directory / "rgb48_30x20.png"
    write_png48(p, rgb48())
    paths["rgb48_30x20"] = p
    return paths


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    image: str
    prompt: str
    edit: str  # what the prompt must select (checked against the reference's keyword table)
    size: tuple[int, int]  # (W, H), always sent explicitly so the bundle defaults do not matter
    num_inference_steps: int = 4
    guidance_scale: float = 1.0
    seed: int = 0

    def argv(self) -> list[str]:
        w, h = self.size
        return [
            "--prompt", self.prompt,
            "--size", f"{w}x{h}",
            "--num-inference-steps", str(self.num_inference_steps),
            "--guidance-scale", repr(float(self.guidance_scale)),
            "--seed", str(self.seed),
        ]

    def settings(self) -> dict:
        return {
            "size": self.size,
            "num_inference_steps": self.num_inference_steps,
            "guidance_scale": self.guidance_scale,
            "seed": self.seed,
        }


S = (96, 64)  # shapes_96x64, native size

CASES: tuple[Case, ...] = (
    # Every edit once, at the input size.
    Case("grayscale", "shapes_96x64", "Make it grayscale", "grayscale", S),
    Case("sepia", "shapes_96x64", "Give it a sepia tone", "sepia", S),
    Case("invert", "shapes_96x64", "Invert the colours", "invert", S),
    Case("contrast", "shapes_96x64", "Increase the contrast", "contrast", S),
    Case("warm", "shapes_96x64", "Make it warmer", "warm", S),
    Case("brighten", "shapes_96x64", "Brighten the picture", "brighten", S),
    Case("posterize", "shapes_96x64", "Posterize it", "posterize", S),
    Case("rotate", "shapes_96x64", "Rotate it by 180 degrees", "rotate", S),
    Case("mirror", "shapes_96x64", "Mirror the image", "mirror", S),
    Case("flip", "shapes_96x64", "Flip vertically", "flip", S),
    Case("blur", "shapes_96x64", "Blur the picture", "blur", S, num_inference_steps=4),
    Case("sharpen", "shapes_96x64", "Sharpen the details", "sharpen", S),
    Case("pixelate", "shapes_96x64", "Pixelate the image", "pixelate", S),
    Case("grain-seed1", "shapes_96x64", "Add film grain", "grain", S, seed=1),
    # Settings variants.
    Case("grain-seedmax", "shapes_96x64", "Add some NOISE", "grain", S, seed=2**63 - 1),
    Case("grain-resized-seed42", "gradient_64x48", "add grain", "grain", (80, 60), seed=42),
    Case("blur-steps1", "checker_40x40", "Soften the image", "blur", (40, 40), num_inference_steps=1),
    Case("blur-steps7", "checker_40x40", "blur", "blur", (40, 40), num_inference_steps=7),
    Case("sharpen-checker", "checker_40x40", "SHARPEN", "sharpen", (40, 40)),
    Case("sepia-up", "gradient_64x48", "Make it look vintage", "sepia", (100, 75)),
    Case("posterize-up2x", "gradient_64x48", "posterise", "posterize", (128, 96)),
    Case("grayscale-down", "shapes_96x64", "black and white please", "grayscale", (41, 27)),
    Case("pixelate-down", "shapes_96x64", "mosaic", "pixelate", (50, 30)),
    Case("pixelate-partial", "odd_37x23", "Pixelize", "pixelate", (37, 23)),
    Case("contrast-g0.5", "shapes_96x64", "more contrast", "contrast", S, guidance_scale=0.5),
    Case("sepia-g0.5", "shapes_96x64", "sepia", "sepia", S, guidance_scale=0.5),
    Case("warm-g2.0", "shapes_96x64", "warm it up", "warm", S, guidance_scale=2.0),
    Case("posterize-g2.0", "gradient_64x48", "Posterize", "posterize", (64, 48), guidance_scale=2.0),
    Case("blur-g2.0", "checker_40x40", "blur", "blur", (40, 40), num_inference_steps=2, guidance_scale=2.0),
    # Decoder: colour types and sizes.
    Case("invert-rgba", "alpha_32x24", "Make a negative", "invert", (32, 24)),
    Case("grayscale-rgb48", "rgb48_30x20", "monochrome", "grayscale", (30, 20)),
    Case("warm-grey", "grey_20x30", "warmer", "warm", (20, 30)),
    Case("brighten-palette", "palette_24x24", "lighten it", "brighten", (24, 24)),
    Case("rotate-odd", "odd_37x23", "turn it upside down", "rotate", (37, 23)),
    Case("mirror-nonsquare", "gradient_64x48", "flip horizontally", "mirror", (64, 48)),
    Case("flip-odd-up", "odd_37x23", "vertical flip", "flip", (45, 31)),
    # The benchmark's first pair with the reference row's settings (families/refedit/family.go quality).
    Case("pair-photo-grayscale", "photo_640x382", "Turn this photo into black and white", "grayscale", (512, 512),
         num_inference_steps=4, guidance_scale=1.0, seed=42),
)

# The grain cases whose outputs must differ from each other (same image and size, two seeds).
GRAIN_SEED_PAIR = ("grain-seed1", "grain-seedmax")

# Instructions the binary must refuse, never a silent no-op: (name, prompt, the edits the
# prompt matches, the edits the refusal must name). No match lists every edit; two name both.
REJECTED_PROMPTS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("no-edit", "Make it nice", (), reference.EDITS),
    ("two-edits", "grayscale and invert", ("grayscale", "invert"), ("grayscale", "invert")),
)
