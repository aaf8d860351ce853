"""Graph colouring of constraints, so that a Gauss-Seidel sweep runs as a few vectorized batches.

Two constraints of one colour never share a particle, so a whole colour can be projected at once
with plain fancy-index updates and the result equals projecting them one after another.
"""
import numpy as np


def colour_constraints(indices: np.ndarray, particle_count: int) -> list:
    """Split constraints into groups that share no particle.

    indices: (constraint_count, k) particle indices of each constraint (k = 2 for edges, 4 for tets).
    Returns a list of int64 arrays of constraint indices, one per colour, covering every constraint once.

    Greedy colouring in constraint order: each constraint takes the lowest colour none of its particles
    has used. This is a one-time setup per Model (a Python loop over constraints, not part of any step);
    on a triangulated grid it gives 6-7 colours for edges, close to the optimum of max degree + 1.
    """
    indices = np.asarray(indices, np.int64)
    used = [0] * particle_count  # bit c set: the particle is already in a constraint of colour c
    colour = np.empty(len(indices), np.int64)
    for c_index, particles in enumerate(indices.tolist()):
        taken = 0
        for p in particles:
            taken |= used[p]
        c = (~taken & (taken + 1)).bit_length() - 1  # lowest clear bit
        colour[c_index] = c
        bit = 1 << c
        for p in particles:
            used[p] |= bit
    order = np.argsort(colour, kind="stable")
    counts = np.bincount(colour)
    return [group for group in np.split(order, np.cumsum(counts)[:-1]) if len(group)]


class ColourOrder:
    """Particle orders that turn each colour of a Gauss-Seidel sweep into contiguous slices.

    For colour c with m_c constraints of k particles each, order c lists the particles as
    [corner 0 of every constraint (m_c), corner 1 (m_c), ..., corner k-1 (m_c), every other particle], so a
    kernel reads and writes corner a of the whole colour as the contiguous slice ``Y[:, a*m_c:(a+1)*m_c]`` of a
    structure-of-arrays buffer Y (3, n) (row 0 = x, 1 = y, 2 = z). No particle appears twice in a colour, so
    the order is a permutation of all n particles. Going from one colour's order to the next is one gather of
    the 3 n coordinates (``steps``), composed beforehand; so is entering from and leaving to the caller's
    (n, 3) array. A sweep of C colours therefore moves the state C + 1 times through memory and does all its
    arithmetic on contiguous slices, instead of gathering and scattering rows of x per colour (a scatter,
    ``x[idx] += dx``, costs several times a gather in NumPy).

    indices: (constraint_count, k) int; colours: list of int arrays of constraint indices (``colour_constraints``);
    particle_count: n. Attributes: ``orders`` (C arrays (n,), position -> particle), ``counts`` (C ints, m_c),
    ``enter`` (3 n,) flat indices into x.reshape(-1) giving order 0's Y.reshape(-1), ``steps`` (C - 1 arrays
    (3 n,), flat indices into the previous Y), ``leave`` (3 n,) flat indices into the last Y giving x.reshape(-1).
    """

    def __init__(self, indices, colours, particle_count: int):
        indices = np.asarray(indices, np.int64)
        n = particle_count
        self.particle_count = n
        self.orders, self.counts = [], []
        for group in colours:
            corners = indices[group].T.ravel()  # corner a of constraint t sits at a*m + t
            untouched = np.ones(n, bool)
            untouched[corners] = False
            if np.count_nonzero(~untouched) != len(corners):
                raise ValueError("a colour shares a particle between two of its constraints")
            self.orders.append(np.concatenate([corners, np.nonzero(untouched)[0]]))
            self.counts.append(len(group))
        row = n * np.arange(3, dtype=np.int64)[:, None]  # start of the x, y, z rows in Y.reshape(-1)
        self.enter = (3 * self.orders[0][None, :] + np.arange(3)[:, None]).ravel()
        self.steps = []
        for previous, current in zip(self.orders[:-1], self.orders[1:]):
            self.steps.append((row + inverse_permutation(previous)[current][None, :]).ravel())
        self.leave = (inverse_permutation(self.orders[-1])[:, None] + row.T).ravel()
        self._buffers = (np.empty((3, n)), np.empty((3, n)))

    def sweep(self, x: np.ndarray, project) -> None:
        """Call ``project(c, Y)`` for every colour c in turn, in place on x (n, 3) float64 C-contiguous.

        project must update Y (3, n), the positions in colour c's order, in place.
        """
        flat = x.reshape(-1)
        if not (x.flags.c_contiguous and x.dtype == np.float64):
            raise ValueError("ColourOrder.sweep needs a C-contiguous float64 (n, 3) array")
        current, spare = self._buffers
        # mode='clip' skips the bounds check (the indices are valid by construction) and the copy NumPy makes of
        # ``out`` under the default mode='raise'.
        np.take(flat, self.enter, out=current.reshape(-1), mode="clip")
        for c in range(len(self.orders)):
            project(c, current)
            if c + 1 < len(self.orders):
                np.take(current.reshape(-1), self.steps[c], out=spare.reshape(-1), mode="clip")
                current, spare = spare, current
        np.take(current.reshape(-1), self.leave, out=flat, mode="clip")


MIN_TOUCHED_FRACTION = 0.25
"""A colour-ordered sweep gathers all 3 n coordinates once per colour; below this mean fraction of the particles
touched per colour, gathering and scattering just the touched rows (the per-batch path) moves less memory."""


def colour_order_pays(indices, colours, particle_count: int) -> bool:
    """Whether a ``ColourOrder`` sweep moves less memory than per-colour gathers and scatters of the touched rows."""
    if not colours:
        return False
    k = np.shape(indices)[1]
    touched = sum(k * len(c) for c in colours)
    return touched >= MIN_TOUCHED_FRACTION * particle_count * len(colours)


def inverse_permutation(order: np.ndarray) -> np.ndarray:
    """position[order[p]] = p for a permutation ``order`` (n,)."""
    position = np.empty(len(order), np.int64)
    position[order] = np.arange(len(order))
    return position
