"""The runaway-repetition guard that replaces DeepSeek-OCR's logits processor under speculation."""

from __future__ import annotations

from model.repetition import check, periodic_tail, trimmed_length


def test_an_output_that_stopped_without_repeats_is_fine():
    verdict = check(list(range(300)), "stop")
    assert not verdict.runaway
    assert verdict.tail is None


def test_an_output_that_hit_the_token_cap_is_runaway_even_without_repeats():
    verdict = check(list(range(300)), "length")
    assert verdict.runaway
    assert verdict.reason == "no-eos"


def test_a_long_repeated_unit_before_eos_is_runaway():
    ids = list(range(50)) + [7, 8, 9] * 40
    verdict = check(ids, "stop")
    assert verdict.runaway
    assert verdict.reason == "repeated-ngram"
    assert verdict.tail.period == 3
    assert verdict.tail.start == 50


def test_a_short_legitimate_repeat_before_eos_is_not_runaway():
    # An empty table row: <td></td> four times, then the page ends.
    ids = list(range(100)) + [5, 6] * 4 + [200, 201]
    assert not check(ids, "stop").runaway


def test_the_longest_periodic_tail_is_found():
    ids = [1, 2, 3] + [4, 5, 6, 7] * 10
    tail = periodic_tail(ids)
    assert (tail.period, tail.start, tail.copies) == (4, 3, 10.0)


def test_a_runaway_output_is_trimmed_to_one_copy_of_its_unit():
    ids = [1, 2, 3] + [4, 5, 6, 7] * 10 + [4, 5]
    tail = periodic_tail(ids)
    assert ids[: trimmed_length(ids, tail)] == [1, 2, 3, 4, 5, 6, 7]
    assert trimmed_length([1, 2, 3], None) == 3
