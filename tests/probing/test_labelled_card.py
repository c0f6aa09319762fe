"""The labelled set's card (assets/labelled/README.md): its probe table is what the probes compute from the
shipped features, and the gaps its sentences state follow from that table."""

from __future__ import annotations

import re

import pytest

from vitviz.assets import assets_dir
from vitviz.probing.api import linear_probe

CARD = (assets_dir() / "labelled" / "README.md").read_text(encoding="utf-8")
KS = (1, 5, "all")
ENCODERS = ("dinov2-small", "mae-tiny", "beit-tiny")


def _cell(mean: float, sd: float, k) -> str:
    return f"{100 * mean:.1f}%" if k == "all" else f"{100 * mean:.1f}% ± {100 * sd:.1f}%"


def _curves() -> dict[tuple[str, bool, str], dict]:
    out = {}
    for enc in ENCODERS:
        for rand in (False, True):
            for pooling in ("cls", "avg"):
                c = linear_probe(enc, -1, pooling, KS, (0, 1, 2, 3, 4), random_init=rand)
                out[enc, rand, pooling] = dict(zip(KS, zip(c.mean(), c.spread())))
    return out


@pytest.fixture(scope="module")
def curves():
    return _curves()


def test_the_probe_table_is_what_the_shipped_features_give(curves) -> None:
    for (enc, rand, pooling), row in curves.items():
        name = enc + (", random weights" if rand else "")
        cells = " | ".join(_cell(*row[k], k) for k in KS)
        assert f"| {name} | {pooling} | {cells} |" in CARD, (name, pooling, cells)


def _gap(curves, k, a: tuple, b: tuple) -> float:
    """Points between two rows of the table as printed (one decimal), as a reader computes it."""
    return round(100 * curves[a][k][0], 1) - round(100 * curves[b][k][0], 1)


def test_the_stated_gaps_follow_from_the_table(curves) -> None:
    text = " ".join(CARD.split())
    dino = ("dinov2-small", False)

    def span(k, others, poolings=("cls", "avg")) -> tuple[int, int]:
        gaps = [_gap(curves, k, (*dino, p), o if len(o) == 3 else (*o, p)) for p in poolings for o in others]
        return round(min(gaps)), round(max(gaps))

    tiny = [("mae-tiny", False), ("beit-tiny", False)]
    lo, hi = span(5, tiny)
    assert f"is {lo}–{hi} points above them with 5 labels a class" in text
    lo_cls, hi_cls = span(5, tiny, ("cls",))
    assert (lo_cls, hi_cls) == (20, 22)
    lo_avg, hi_avg = span(5, tiny, ("avg",))
    assert f"{lo_avg}–{hi_avg} with the average token" in text
    lo, hi = span("all", tiny)
    assert f"and {lo}–{hi} points with all labels" in text
    lo, hi = span(5, [("dinov2-small", True)])
    assert f"it is {lo}–{hi} points above its own random weights with 5 labels a class" in text
    lo, hi = span("all", [("dinov2-small", True)])
    assert f"({lo}–{hi} with all labels)" in text
    for enc in ("mae-tiny", "beit-tiny"):  # below their random-weight twins with 1 label, above with 5
        assert _gap(curves, 1, (enc, False, "cls"), (enc, True, "cls")) < 0
    gaps5 = [_gap(curves, 5, (e, False, "cls"), (e, True, "cls")) for e in ("mae-tiny", "beit-tiny")]
    assert f"only {min(gaps5):.1f}–{max(gaps5):.1f} points above their random-weight" in text


def test_the_small_data_finding_cites_vit_section_4_3() -> None:
    assert "§4.3 \"Pre-training data requirements\", fig. 3–4" in CARD and not re.search(r"§4\.2, fig\. 3", CARD)
