"""The review flag's choice made with whole documents held out (model/quality/review_choice.py):
a threshold that only suits one document's page does not help that document, a signal that
only costs false flags is left out, and a document is never judged by a choice it made."""

from __future__ import annotations

from model.quality.review_choice import (
    TUNABLE,
    FlagChoice,
    choose,
    confusion,
    flagged,
    judged_by,
    leave_one_document_out,
)
from model.quality.review_eval import PageVerdict


def page(document: str, should: bool, **signals: tuple[bool, float | None]) -> PageVerdict:
    return PageVerdict(
        document,
        f"{document}#{len(signals)}{should}",
        should,
        {name: {"ok": ok, "value": value} for name, (ok, value) in signals.items()},
    )


def test_a_tunable_signal_is_judged_by_its_value_at_the_chosen_threshold():
    low = page("a", True, agreement=(True, 0.88))  # passes at the code's 0.85
    assert not flagged(low, FlagChoice())
    assert flagged(low, FlagChoice({"agreement": 0.9}))
    assert not flagged(low, FlagChoice({"agreement": 0.9}, frozenset({"agreement"})))


def test_a_signal_that_only_flags_clean_pages_is_left_out():
    pages = [
        page("a", True, table=(False, 1.0), markup=(True, 0.0)),
        page("b", False, table=(True, 0.0), markup=(False, 2.0)),
        page("c", False, table=(True, 0.0), markup=(False, 1.0)),
    ]
    choice = choose(pages)
    assert "markup" in choice.off and "table" not in choice.off
    assert confusion(pages, choice).false_flags == 0


def test_a_threshold_chosen_for_one_document_does_not_help_it_when_it_is_held_out():
    # Only document "odd" has a failing page that reads 0.93; everywhere else a clean page
    # reads 0.93 and failing ones under 0.8. On all pages 0.95 catches "odd"; without it,
    # the choice stays low and "odd" is missed, as it would be on a new document.
    pages = [
        page("odd", True, agreement=(True, 0.93)),
        *(page(f"d{i}", True, agreement=(False, 0.7)) for i in range(3)),
        *(page(f"c{i}", False, agreement=(True, 0.99)) for i in range(3)),
    ]
    assert TUNABLE["agreement"].default == 0.85
    in_sample = confusion(pages, choose(pages))
    assert in_sample.missed == 0
    held, alone, chosen = leave_one_document_out(pages)
    assert held.missed_pages == [pages[0].page]
    assert chosen["odd"].threshold("agreement") < 0.93
    assert alone["agreement"].missed == 1


def test_the_held_aside_part_is_judged_by_a_choice_made_elsewhere():
    tuned = [page("a", True, ink=(True, 0.38)), page("b", False, ink=(True, 0.6))]
    choice = choose(tuned)
    assert choice.threshold("ink") > 0.38
    held = [page("h", True, ink=(True, 0.39)), page("k", False, ink=(True, 0.45))]
    flag, _ = judged_by(held, choice)
    assert (flag.caught, flag.false_flags) == (1, int(choice.threshold("ink") > 0.45))
