"""Gundam tiling against DeepSeek-OCR's rules: grids, visual tokens, vLLM's placeholder counts."""

from __future__ import annotations

import pytest
from PIL import Image

from model import gundam
from model.gundam import Grid, choose_grid, placeholder_count, visual_tokens


def test_a_page_within_640_square_gets_only_the_global_view():
    assert choose_grid(640, 640) == gundam.NO_TILES
    assert choose_grid(600, 400) == gundam.NO_TILES
    assert choose_grid(1, 1) == gundam.NO_TILES


def test_a_portrait_a4_page_at_144_dpi_gets_two_columns_of_three_rows():
    assert choose_grid(1190, 1684) == Grid(2, 3)
    assert choose_grid(1000, 1400) == Grid(2, 3)


def test_a_landscape_page_gets_the_transposed_grid():
    assert choose_grid(1684, 1190) == Grid(3, 2)


def test_a_long_thin_receipt_gets_one_column():
    assert choose_grid(500, 2400) == Grid(1, 5)
    assert choose_grid(400, 3000) == Grid(1, 6)


def test_a_square_page_prefers_the_larger_grid_on_a_tie_when_it_is_big_enough():
    # (2,2) and (3,3) both match a square exactly; 3×3 is only allowed past the upstream cap.
    assert choose_grid(1600, 1600) == Grid(2, 2)
    assert choose_grid(1600, 1600, max_tiles=9) == Grid(3, 3)
    # 1,000² px is less than half of 3×3 tiles' 3.7 M px: the smaller grid stays.
    assert choose_grid(1000, 1000, max_tiles=9) == Grid(2, 2)


def test_a_page_just_over_640_gets_at_least_two_tiles():
    grid = choose_grid(700, 600)
    assert grid.tiles >= gundam.MIN_TILES


def test_visual_tokens_are_256_plus_100_per_tile_and_at_most_1156():
    assert visual_tokens(gundam.NO_TILES) == 256
    assert visual_tokens(Grid(2, 3)) == 856
    assert visual_tokens(Grid(3, 3)) == 1156
    worst = max(visual_tokens(g) for g in gundam.candidate_grids(gundam.MAX_TILES))
    assert worst == 1156


def test_placeholder_counts_match_vllm():
    assert placeholder_count(gundam.NO_TILES) == 273
    assert placeholder_count(Grid(2, 3)) == 903
    assert placeholder_count(Grid(3, 3)) == 1203


def test_no_grid_exceeds_the_tile_cap():
    assert all(g.tiles <= 6 for g in gundam.candidate_grids())
    assert {g.tiles for g in gundam.candidate_grids(9)} == set(range(2, 10))
    with pytest.raises(ValueError):
        gundam.candidate_grids(10)


def test_the_global_view_is_padded_grey_not_stretched():
    page = Image.new("RGB", (500, 1000), (255, 255, 255))
    view = gundam.global_view(page)
    assert view.size == (1024, 1024)
    assert view.getpixel((5, 512)) == gundam.PAD_COLOR
    assert view.getpixel((512, 512)) == (255, 255, 255)


def test_tiles_cover_the_page_row_by_row():
    page = Image.new("RGB", (1190, 1684), (255, 255, 255))
    page.paste((0, 0, 0), (0, 1684 - 100, 1190, 1684))  # a black band at the bottom
    cut = gundam.tiles(page, Grid(2, 3))
    assert [t.size for t in cut] == [(640, 640)] * 6
    assert cut[0].getpixel((320, 639)) == (255, 255, 255)
    assert cut[-1].getpixel((320, 639)) == (0, 0, 0)
    assert gundam.tiles(page, gundam.NO_TILES) == []
