"""The live picture (vitviz.views.live): each frame through the tab's reconstruction path, the mask held."""

from __future__ import annotations

import numpy as np
import pytest

from tools.fake_camera import pan_frames
from vitviz.errors import ImageError
from vitviz.mae.reconstruct import reconstruct
from vitviz.models.loading import load_model
from vitviz.views import live
from vitviz.views.mae import masked_panel


@pytest.fixture(scope="module")
def frames() -> list[np.ndarray]:
    return pan_frames(count=6)



def test_a_frame_is_the_tabs_reconstruction_of_that_picture(frames) -> None:
    model = load_model("mae-tiny")
    f = live.live_frame("mae-tiny", frames[2], 0.75, 3, "random")
    r = reconstruct(model, frames[2], 0.75, 3, "random")
    assert np.array_equal(f.pasted, r.pasted)
    assert np.array_equal(f.masked, masked_panel(r))
    assert (f.hidden, f.patches, f.seed) == (int(r.mask.sum()), r.num_patches, 3)
    assert f.masked_mse == pytest.approx(r.masked_mse)
    assert f.hidden == round(0.75 * 196) and f.hidden_share == pytest.approx(147 / 196)


def test_the_mask_is_held_while_the_picture_moves_unless_fresh(frames) -> None:
    model = load_model("mae-tiny")
    held = [live.live_frame("mae-tiny", fr, 0.5, 0, "random", number=i) for i, fr in enumerate(frames[:3])]
    assert {f.seed for f in held} == {0}
    masks = [reconstruct(model, fr, 0.5, f.seed, "random").mask for fr, f in zip(frames, held)]
    assert all(np.array_equal(masks[0], m) for m in masks[1:])
    assert not np.array_equal(held[0].pasted, held[1].pasted)  # the picture moved
    fresh = [live.live_frame("mae-tiny", frames[0], 0.5, 0, "random", number=i, fresh=True) for i in range(3)]
    assert [f.seed for f in fresh] == [0, 1, 2]
    fresh_masks = [reconstruct(model, frames[0], 0.5, f.seed, "random").mask for f in fresh]
    assert not np.array_equal(fresh_masks[0], fresh_masks[1])
    assert all(f.hidden == 98 for f in fresh)


def test_frame_seeds_wrap_within_the_valid_seeds() -> None:
    assert live.frame_seed(5, 7, False) == 5
    assert live.frame_seed(5, 7, True) == 12
    assert live.frame_seed(2**63 - 1, 1, True) == 0


def test_a_painted_mask_is_used_as_painted(frames) -> None:
    painted = np.zeros((14, 14), dtype=bool)
    painted[3:9, 4:10] = True
    f = live.live_frame("mae-tiny", frames[0], 0.9, 0, "random", painted=painted)
    assert f.seed is None and f.hidden == 36
    r = reconstruct(load_model("mae-tiny"), frames[0], mask=painted)
    assert np.array_equal(f.pasted, r.pasted)
    assert "painted mask" in live.frame_line(f)


def test_bad_frames_and_controls_are_sentences(frames) -> None:
    with pytest.raises(ValueError, match="pattern"):
        live.live_frame("mae-tiny", frames[0], 0.5, 0, "checkers")
    with pytest.raises(ValueError):
        live.live_frame("mae-tiny", frames[0], 1.5, 0, "random")
    with pytest.raises(ImageError, match="pixels"):
        live.live_frame("mae-tiny", np.zeros((4, 0, 3), dtype=np.uint8), 0.5, 0, "random")


def test_the_line_names_the_hidden_share_and_the_server_time(frames) -> None:
    f = live.live_frame("mae-tiny", frames[1], 0.25, 4, "block")
    text = live.frame_line(f)
    assert f"{f.hidden} of 196 patches hidden" in text and "mask seed 4" in text and "server" in text
