"""PC2 point-cache files (pure I/O): the format Blender's Mesh Cache modifier plays.

Layout (little-endian): header struct.pack("<12siiffi", b"POINTCACHE2\\0", 1, vertex_count,
frame_start, sample_rate, frame_count), then frame_count x vertex_count x 3 float32 positions.
"""
import os
import struct
import tempfile

import numpy as np

HEADER = struct.Struct("<12siiffi")
SIGNATURE = b"POINTCACHE2\0"


def write_pc2(path: str, frames: np.ndarray, frame_start: float, sample_rate: float = 1.0) -> None:
    """Write frames (frame_count, vertex_count, 3) to ``path`` atomically.

    The data goes to a temporary file in the same folder that replaces ``path`` only once complete,
    so a failed write never destroys an earlier cache.
    """
    frames = np.ascontiguousarray(frames, dtype="<f4")
    if frames.ndim != 3 or frames.shape[2] != 3:
        raise ValueError(f"frames must have shape (frame_count, vertex_count, 3), got {frames.shape}")
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".softsim-", suffix=".pc2.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(HEADER.pack(SIGNATURE, 1, frames.shape[1], float(frame_start), float(sample_rate), frames.shape[0]))
            f.write(frames.tobytes())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read_pc2(path: str):
    """Read a PC2 file: returns (frames (frame_count, vertex_count, 3) float32, frame_start, sample_rate)."""
    with open(path, "rb") as f:
        signature, version, vertex_count, frame_start, sample_rate, frame_count = HEADER.unpack(f.read(HEADER.size))
        if signature != SIGNATURE:
            raise ValueError(f"{path} is not a PC2 file")
        data = np.frombuffer(f.read(), dtype="<f4")
    if data.size != frame_count * vertex_count * 3:
        raise ValueError(f"{path} is truncated: expected {frame_count} frames of {vertex_count} vertices")
    return data.reshape(frame_count, vertex_count, 3), frame_start, sample_rate


def append_pc2_frame(path: str, positions: np.ndarray) -> int:
    """Append one frame (vertex_count, 3) to the PC2 file at ``path`` and count it in the header; returns the new frame
    count. The frame is written before the header counts it, so a reader never sees a frame that is not there (the
    live display grows its file this way, one simulated frame at a time)."""
    frame = np.ascontiguousarray(positions, dtype="<f4")
    with open(path, "r+b") as f:
        signature, version, vertex_count, frame_start, sample_rate, frame_count = HEADER.unpack(f.read(HEADER.size))
        if signature != SIGNATURE:
            raise ValueError(f"{path} is not a PC2 file")
        if frame.shape != (vertex_count, 3):
            raise ValueError(f"{path} holds {vertex_count} vertices per frame, not {frame.shape}")
        f.seek(HEADER.size + frame_count * vertex_count * 12)
        f.write(frame.tobytes())
        f.truncate()
        f.flush()
        f.seek(0)
        f.write(HEADER.pack(signature, version, vertex_count, frame_start, sample_rate, frame_count + 1))
    return frame_count + 1
