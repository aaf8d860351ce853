"""A small deterministic, vectorized 3D value noise for the Turbulence field and for field noise (gusts).

Value noise: pseudo-random values at the integer lattice points (an integer hash of the lattice coordinates and a
seed, no tables, no global state), blended with the quintic fade 6t^5 - 15t^4 + 10t^3 inside each cell, so the result
is C2-smooth in space and the same on every platform and run. ``turbulence`` sums octaves like Blender's
``BLI_noise_generic_turbulence`` (each octave at twice the frequency and half the amplitude), normalized to [0, 1].
This is our own noise, not Blender's Perlin noise: the pattern differs from built-in Cloth's, its statistics
(range [0, 1], mean 1/2, feature size ``size``) are the same kind.
"""
import numpy as np

_MASK = np.uint64(0xFFFFFFFF)


def _hash(ix, iy, iz, seed: int) -> np.ndarray:
    """Uniform values in [0, 1) for integer lattice coordinates (int64 arrays of one shape), per ``seed``."""
    h = (ix.astype(np.uint64) * np.uint64(73856093)) ^ (iy.astype(np.uint64) * np.uint64(19349663)) \
        ^ (iz.astype(np.uint64) * np.uint64(83492791)) ^ np.uint64(((int(seed) * 2654435761) ^ 0x9E3779B9) & 0xFFFFFFFF)
    h &= _MASK
    # A few rounds of an integer mixer (xorshift-multiply) to spread neighbouring lattice points apart.
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x7FEB352D)) & _MASK
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x846CA68B)) & _MASK
    h ^= h >> np.uint64(16)
    return h.astype(np.float64) / 4294967296.0


def value_noise(p: np.ndarray, seed: int = 0) -> np.ndarray:
    """Smooth noise in [0, 1) at points ``p`` (n, 3) (lattice spacing 1), per ``seed``; shape (n,)."""
    p = np.asarray(p, np.float64)
    cell = np.floor(p)
    f = p - cell
    w = f * f * f * (f * (f * 6.0 - 15.0) + 10.0)
    i = cell.astype(np.int64)
    out = np.zeros(len(p))
    for dx in (0, 1):
        wx = w[:, 0] if dx else 1.0 - w[:, 0]
        for dy in (0, 1):
            wy = w[:, 1] if dy else 1.0 - w[:, 1]
            for dz in (0, 1):
                wz = w[:, 2] if dz else 1.0 - w[:, 2]
                out += wx * wy * wz * _hash(i[:, 0] + dx, i[:, 1] + dy, i[:, 2] + dz, seed)
    return out


def turbulence(p: np.ndarray, size: float, octaves: int = 2, seed: int = 0) -> np.ndarray:
    """Fractal noise in [0, 1] at points ``p`` (n, 3) [m] with feature size ``size`` [m] (> 0): the sum of
    ``octaves`` value noises, octave k at frequency 2^k / size and amplitude 2^-k, divided by the amplitudes' sum."""
    p = np.asarray(p, np.float64) / max(float(size), 1e-9)
    total, amplitude, norm = np.zeros(len(p)), 1.0, 0.0
    for k in range(octaves):
        total += amplitude * value_noise(p * (2.0 ** k), seed + 101 * k)
        norm += amplitude
        amplitude *= 0.5
    return total / norm
