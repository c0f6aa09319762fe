"""Reading video files (vitviz.core.video): frames decode in order, the limits refuse with sentences.

Every video is written here by the same library's encoder (PyAV), so the tests need no fixture file.
"""

from __future__ import annotations

import numpy as np
import pytest

from vitviz.core import video
from vitviz.errors import ImageError

pytest.importorskip("av")


def _frames(count: int = 12, size: tuple[int, int] = (96, 64)) -> list[np.ndarray]:
    """``count`` frames ``(H, W, 3)``: a bright square moving left to right on a dark ground."""
    w, h = size
    out = []
    for i in range(count):
        f = np.full((h, w, 3), 30, dtype=np.uint8)
        x = i * (w - 16) // max(1, count - 1)
        f[h // 2 - 8:h // 2 + 8, x:x + 16] = (240, 200, 40)
        out.append(f)
    return out


def test_frames_decode_in_order_with_their_times(tmp_path) -> None:
    frames = _frames()
    path = video.write_video(tmp_path / "clip.mp4", frames, fps=10)
    info = video.probe(path)
    assert (info.width, info.height, info.codec) == (96, 64, "mpeg4")
    assert info.fps == pytest.approx(10) and info.frames == 12 and info.seconds == pytest.approx(1.2, abs=0.11)
    got = list(video.read_frames(path))
    assert [f.index for f in got] == list(range(12))
    assert [round(f.time, 3) for f in got] == pytest.approx([i / 10 for i in range(12)], abs=1e-3)
    for f, want in zip(got, frames):  # lossy, but each frame is its own picture: the square is where it was
        assert f.rgb.shape == (64, 96, 3) and f.rgb.dtype == np.uint8
        assert np.abs(f.rgb.astype(int) - want.astype(int)).mean() < 8
    assert sorted(tmp_path.iterdir()) == [path]  # decoding writes no file


def test_frames_decode_smaller_at_the_asked_short_side_never_larger(tmp_path) -> None:
    path = video.write_video(tmp_path / "clip.webm", _frames(4, (128, 96)), fps=5, codec="libvpx")
    assert {f.rgb.shape for f in video.read_frames(path, short_side=48)} == {(48, 64, 3)}
    assert {f.rgb.shape for f in video.read_frames(path, short_side=500)} == {(96, 128, 3)}


def test_a_stopped_iteration_closes_the_file(tmp_path) -> None:
    path = video.write_video(tmp_path / "clip.mp4", _frames(), fps=10)
    it = video.read_frames(path)
    assert next(it).index == 0
    it.close()  # what a cancelled playback does
    with pytest.raises(StopIteration):
        next(it)


def test_the_limits_refuse_with_sentences(tmp_path, monkeypatch) -> None:
    long = video.write_video(tmp_path / "long.mp4", _frames(3), fps=1)  # 3 s
    monkeypatch.setattr(video, "MAX_SECONDS", 2.0)
    with pytest.raises(ImageError, match=r"3 s long; the limit is 2 s"):
        video.probe(long)
    with pytest.raises(ImageError, match="the limit is 2 s"):
        next(video.read_frames(long))
    monkeypatch.setattr(video, "MAX_SECONDS", 60.0)
    monkeypatch.setattr(video, "MAX_FRAMES", 2)
    with pytest.raises(ImageError, match="3 frames; the limit is 2"):
        video.probe(long)
    monkeypatch.setattr(video, "MAX_FRAMES", 3600)
    monkeypatch.setattr(video, "MAX_WIDTH", 80)
    with pytest.raises(ImageError, match=r"96x64 pixels; the limit is 80x1080"):
        video.probe(video.write_video(tmp_path / "wide.mp4", _frames(2), fps=5))
    monkeypatch.setenv("VITVIZ_MAX_UPLOAD", "1kb")
    with pytest.raises(ImageError, match="MB; the limit is"):
        video.probe(long)


def test_files_that_are_not_videos_are_sentences(tmp_path) -> None:
    (tmp_path / "empty.mp4").write_bytes(b"")
    (tmp_path / "text.mp4").write_text("not a video at all " * 50)
    with pytest.raises(ImageError, match="empty"):
        video.probe(tmp_path / "empty.mp4")
    with pytest.raises(ImageError, match="not a video vitviz can read"):
        video.probe(tmp_path / "text.mp4")
    with pytest.raises(ImageError, match="no readable file"):
        video.probe(tmp_path / "missing.mp4")
    good = video.write_video(tmp_path / "cut.mp4", _frames(), fps=10).read_bytes()
    (tmp_path / "cut.mp4").write_bytes(good[: len(good) // 3])  # cut short: whatever decodes, then a sentence
    try:
        got = list(video.read_frames(tmp_path / "cut.mp4"))
    except ImageError as exc:
        assert "video" in str(exc)
    else:
        assert len(got) < 12


def test_the_door_knows_a_video_by_its_first_bytes(tmp_path) -> None:
    for name, codec in (("a.mp4", "mpeg4"), ("a.mov", "mpeg4"), ("a.webm", "libvpx"), ("a.avi", "mpeg4")):
        assert video.looks_like_video(video.write_video(tmp_path / name, _frames(2), fps=5, codec=codec).read_bytes()[:12])
    assert not video.looks_like_video(b"\xff\xd8\xff\xe0" + b"\0" * 8)  # a JPEG
    assert not video.looks_like_video(b"RIFF\0\0\0\0WEBPVP8 ")  # a WebP
    assert not video.looks_like_video(b"")
