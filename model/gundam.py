"""DeepSeek-OCR's "Gundam" dynamic resolution: one 1024×1024 global view plus 640×640 tiles.

The rules follow DeepSeek-OCR's ``process/image_process.py`` (and vLLM's copy of it):

- A page no larger than 640×640 gets no tiles, only the global view.
- Otherwise the grid (columns, rows) is the one whose aspect ratio is closest to the page's,
  among all grids of ``MIN_TILES``..``max_tiles`` tiles; on a tie, the larger grid wins when
  the page has more than half its pixels.
- The global view is the page padded (not stretched) to 1024×1024 with the image mean,
  (127, 127, 127).

Visual tokens: the global view gives 16×16 = 256, each tile 10×10 = 100, so 1,156 at most with
nine tiles. vLLM's prompt also counts one newline token per row of the token grid and one
separator, which is what ``placeholder_count`` returns (273 without tiles, 903 for 2×3).

Used by the engines to say what a page costs before it is sent, and by the tests to hold
vLLM's processor to these rules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image, ImageOps

BASE_SIZE = 1024
TILE_SIZE = 640
PATCH_SIZE = 16
DOWNSAMPLE = 4
MIN_TILES = 2
# Upstream vLLM fixes the cap at 6; jina-ocr-v1's own registration glue lifts it to 9.
DEFAULT_MAX_TILES = 6
MAX_TILES = 9
PAD_COLOR = (127, 127, 127)

BASE_QUERIES = math.ceil(BASE_SIZE // PATCH_SIZE / DOWNSAMPLE)  # 16 per side
TILE_QUERIES = math.ceil(TILE_SIZE // PATCH_SIZE / DOWNSAMPLE)  # 10 per side


@dataclass(frozen=True)
class Grid:
    columns: int
    rows: int

    @property
    def tiles(self) -> int:
        # A 1×1 "grid" means no local tiles at all, only the global view.
        return 0 if self.columns * self.rows == 1 else self.columns * self.rows


NO_TILES = Grid(1, 1)


def candidate_grids(max_tiles: int = DEFAULT_MAX_TILES) -> list[Grid]:
    """Every grid of MIN_TILES..max_tiles tiles, fewest tiles first (the tie-break relies on it;
    columns break ties among equal counts so the order never depends on set iteration)."""
    if not MIN_TILES <= max_tiles <= MAX_TILES:
        raise ValueError(f"max_tiles must be between {MIN_TILES} and {MAX_TILES}, not {max_tiles}")
    grids = {
        (c, r)
        for c in range(1, max_tiles + 1)
        for r in range(1, max_tiles + 1)
        if MIN_TILES <= c * r <= max_tiles
    }
    return [Grid(c, r) for c, r in sorted(grids, key=lambda g: (g[0] * g[1], g[0]))]


def choose_grid(width: int, height: int, max_tiles: int = DEFAULT_MAX_TILES) -> Grid:
    """The tile grid DeepSeek-OCR picks for a page of ``width`` × ``height`` pixels."""
    if width <= 0 or height <= 0:
        raise ValueError(f"a page has a positive size, not {width}×{height}")
    if width <= TILE_SIZE and height <= TILE_SIZE:
        return NO_TILES
    aspect = width / height
    area = width * height
    best, best_diff = NO_TILES, math.inf
    for grid in candidate_grids(max_tiles):
        diff = abs(aspect - grid.columns / grid.rows)
        if diff < best_diff:
            best, best_diff = grid, diff
        elif diff == best_diff and area > 0.5 * TILE_SIZE * TILE_SIZE * grid.columns * grid.rows:
            best = grid
    return best


def visual_tokens(grid: Grid) -> int:
    """Vision tokens before newline and separator tokens: 256 + 100 per tile."""
    return BASE_QUERIES**2 + TILE_QUERIES**2 * grid.tiles


def placeholder_count(grid: Grid) -> int:
    """Image placeholder tokens in vLLM's prompt: each row of the token grid ends in a newline
    token, and one separator follows the global view."""
    count = (BASE_QUERIES + 1) * BASE_QUERIES + 1
    if grid.tiles:
        count += (TILE_QUERIES * grid.columns + 1) * (TILE_QUERIES * grid.rows)
    return count


def global_view(image: Image.Image) -> Image.Image:
    """The page padded to BASE_SIZE square, centred, with the mean colour around it."""
    return ImageOps.pad(image.convert("RGB"), (BASE_SIZE, BASE_SIZE), color=PAD_COLOR)


def tiles(image: Image.Image, grid: Grid) -> list[Image.Image]:
    """The page stretched onto the grid and cut into TILE_SIZE squares, row by row."""
    if not grid.tiles:
        return []
    resized = image.convert("RGB").resize((TILE_SIZE * grid.columns, TILE_SIZE * grid.rows))
    return [
        resized.crop((c * TILE_SIZE, r * TILE_SIZE, (c + 1) * TILE_SIZE, (r + 1) * TILE_SIZE))
        for r in range(grid.rows)
        for c in range(grid.columns)
    ]
