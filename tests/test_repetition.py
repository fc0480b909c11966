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


def test_a_loop_that_ends_in_the_end_of_sequence_id_is_still_runaway():
    # vLLM keeps the EOS id (here 1) in token_ids: the tail check must look past it.
    ids = list(range(50, 100)) + [7, 8, 9] * 40 + [1]
    assert not check(ids, "stop").runaway  # what the guard saw before stop ids were stripped
    verdict = check(ids, "stop", stop_ids={1})
    assert verdict.runaway and verdict.reason == "repeated-ngram"
    assert (verdict.tail.period, verdict.tail.start) == (3, 50)
    assert trimmed_length(ids, verdict.tail) == 53


def test_several_trailing_stop_ids_are_all_stripped():
    ids = list(range(50, 100)) + [4, 5] * 60 + [1, 2, 2]
    assert check(ids, "stop", stop_ids={1, 2}).reason == "repeated-ngram"
    assert not check(list(range(50, 300)) + [1], "stop", stop_ids={1}).runaway
