"""PC2 files: the exact layout of docs/api.md, and a failed write never destroys an earlier cache."""
import os
import struct

import numpy as np
import pytest

from solvers import cache


def test_pc2_layout_is_the_documented_one(tmp_path):
    frames = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    path = str(tmp_path / "Body.pc2")
    cache.write_pc2(path, frames, frame_start=7)
    raw = open(path, "rb").read()
    assert raw[:32] == struct.pack("<12siiffi", b"POINTCACHE2\0", 1, 3, 7.0, 1.0, 2)
    assert np.array_equal(np.frombuffer(raw[32:], "<f4").reshape(2, 3, 3), frames)
    read, start, rate = cache.read_pc2(path)
    assert np.array_equal(read, frames) and start == 7.0 and rate == 1.0


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = str(tmp_path / "Body.pc2")
    cache.write_pc2(path, np.zeros((1, 2, 3)), 1)
    before = open(path, "rb").read()

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.os, "replace", broken_replace)
    with pytest.raises(OSError):
        cache.write_pc2(path, np.ones((5, 2, 3)), 1)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["Body.pc2"]


def test_truncated_file_is_reported(tmp_path):
    path = str(tmp_path / "Body.pc2")
    cache.write_pc2(path, np.zeros((3, 4, 3)), 1)
    with open(path, "r+b") as f:
        f.truncate(40)
    with pytest.raises(ValueError, match="truncated"):
        cache.read_pc2(path)


def test_appending_frames_gives_the_file_write_pc2_writes_of_all_of_them(tmp_path):
    frames = np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)
    grown, whole = str(tmp_path / "grown.pc2"), str(tmp_path / "whole.pc2")
    cache.write_pc2(grown, frames[:1], frame_start=3)
    for k in range(1, 4):
        assert cache.append_pc2_frame(grown, frames[k]) == k + 1
    cache.write_pc2(whole, frames, frame_start=3)
    assert open(grown, "rb").read() == open(whole, "rb").read()
    with pytest.raises(ValueError, match="holds 5 vertices per frame"):
        cache.append_pc2_frame(grown, frames[0, :4])
    assert open(grown, "rb").read() == open(whole, "rb").read()
