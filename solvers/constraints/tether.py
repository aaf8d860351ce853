"""Pin tethers: long-range attachments (Kim, Chentanez and Müller 2012, "Long Range Attachments").

Hanging cloth stretches near its pins because a few constraint sweeps cannot carry the weight of a
fine mesh back to the pins in one step. A tether lets each free particle move at most
(1 + max_stretch) times its rest geodesic distance (along mesh edges) away from its nearest pin, and
projects it back when it goes beyond. It is a one-sided strain limit, not a spring: inside the limit
it does nothing, so the solver's own stiffness rules until then.
"""
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra


MAX_PINS_TETHERED_TO_ALL = 32
"""Up to this many pins every free particle is tethered to each pin it is connected to. With more, each
particle is tethered to its nearest pin only (a distance matrix of every pin would not fit); nearby pins
then sit close together, so the halves tethered to different pins barely pull apart."""


SMALL_SLOT = 2048
"""Slots of fewer tethers than this are swept whole in every pass of ``PinTethers.apply``; larger ones only in the
first, then at the particles some slot projected since."""


class PinTethers:
    """Tethers from free particles to pins, in slots: no particle appears twice within a slot.

    slots: list of (particle (t,), pin (t,), limit (t,)) with int64 particle and pin indices and the
    largest allowed distance [m] between them.
    """

    def __init__(self, model, max_stretch: float):
        self.slots = []
        self._fast = []
        pinned = np.nonzero(model.pinned)[0]
        n = model.particle_count
        if len(pinned) == 0 or len(pinned) == n:
            return
        i, j = model.edge_indices[:, 0], model.edge_indices[:, 1]
        graph = sp.csr_matrix((model.edge_rest_length, (i, j)), shape=(n, n))
        free = model.inv_mass > 0.0
        if len(pinned) <= MAX_PINS_TETHERED_TO_ALL:
            # Every pin: a particle between two pins must respect both, or the halves tethered to
            # different pins tear apart along the line where the nearest pin changes.
            distance = np.atleast_2d(dijkstra(graph, directed=False, indices=pinned))
            sources = [(pinned[k], distance[k]) for k in range(len(pinned))]
        else:
            distance, _, source = dijkstra(graph, directed=False, indices=pinned, min_only=True, return_predecessors=True)
            sources = [(source, distance)]
        for pin, dist in sources:
            particle = np.nonzero(np.isfinite(dist) & free)[0]
            pin_of = np.broadcast_to(pin, (n,))[particle].astype(np.int64)
            self.slots.append((particle, pin_of, (1.0 + max_stretch) * dist[particle]))

        self._prepare()

    def _prepare(self) -> None:
        """Per slot: flat gather indices (3, t) into x.reshape(-1), the pin (an int when the slot has one pin, as
        with up to MAX_PINS_TETHERED_TO_ALL pins, else gather indices (3, t)), 1.001 x limit, scratch buffers."""
        xyz = np.arange(3)[:, None]
        self._fast = []
        for particle, pin, limit in self.slots:
            single = len(pin) > 0 and bool(np.all(pin == pin[0]))
            pin_at = int(pin[0]) if single else 3 * pin[None, :] + xyz
            t = len(particle)
            self._fast.append((3 * particle[None, :] + xyz, pin_at, 1.001 * limit, np.empty((3, t)), np.empty((3, t)),
                               np.empty(t)))
        # Below this many tethers per slot, a whole pass costs less than sorting out which particles moved (measured:
        # on the 21 x 21 lab cloth, 439 per slot, the passes over the moved particles only were 10% slower).
        self._small = max((len(particle) for particle, _, _ in self.slots), default=0) < SMALL_SLOT
        # Every slot's tethers side by side, for the check of a whole pass at once (``_any_past``): on a cape pinned
        # along its collar (21 pins, 21 slots) a pass is 21 x ~12 array operations, most of them finding nothing.
        if self.slots:
            self._all_gather = np.concatenate([gather for gather, *_ in self._fast], axis=1)
            self._all_pin = np.concatenate([3 * pin[None, :] + xyz for _, pin, _ in self.slots], axis=1)
            self._all_limit = np.concatenate([limit for _, _, limit in self.slots])
            t = len(self._all_limit)
            self._all_scratch = (np.empty((3, t)), np.empty((3, t)), np.empty(t))
        # Where each particle sits in each slot (-1: not in it), for the passes after the first (``apply``).
        n = 1 + max((int(particle.max()) for particle, _, _ in self.slots if len(particle)), default=-1)
        self._position = []
        for particle, _, _ in self.slots:
            position = np.full(n, -1, np.int64)
            position[particle] = np.arange(len(particle))
            self._position.append(position)

    def apply(self, x: np.ndarray, passes: int = 3) -> None:
        """Pull every particle farther than its limit from a pin back onto the limit, in place.

        Slot by slot (Gauss-Seidel over the pins); a later pin's projection can undo a little of an
        earlier one's, so with several pins the slots are swept again, up to ``passes`` times, while
        any particle was more than 0.1% past a limit.
        x: (n, 3) float64 [m]. Each slot is one gather of its particles into a structure of arrays (3, t), whole-array
        arithmetic into preallocated buffers, and a write of only the particles past their limit (usually few).
        Same arithmetic as the row-wise form (``apply_reference``) to round-off.
        """
        if not (x.flags.c_contiguous and x.dtype == np.float64):
            self.apply_reference(x, passes)
            return
        flat = x.reshape(-1)
        projected = []  # arrays of the particles projected in this pass
        for sweep in range(passes):
            far_past = False
            if (sweep == 0 or self._small) and not self._any_past(flat):
                return  # no particle past any limit: the pass would not move anything (most calls)
            if sweep == 0 or self._small:
                for (particle, _pin, limit), (gather, pin_at, far, p, d, length) in zip(self.slots, self._fast):
                    np.take(flat, gather, out=p, mode="clip")
                    if isinstance(pin_at, int):
                        anchor = x[pin_at][:, None]  # (3, 1): one pin for the whole slot
                    else:
                        anchor = np.take(flat, pin_at, mode="clip")
                    np.subtract(p, anchor, out=d)
                    np.multiply(d, d, out=p)
                    np.add(p[0], p[2], out=length)  # einsum's order of the row sum: (x^2 + z^2) + y^2
                    np.add(length, p[1], out=length)
                    np.sqrt(length, out=length)
                    over = np.nonzero(length > limit)[0]
                    if len(over):
                        far_past = far_past or bool(np.any(length[over] > far[over]))
                        near = anchor if anchor.shape[1] == 1 else anchor[:, over]
                        x[particle[over]] = (near + d[:, over] * (limit[over] / length[over])).T
                        projected.append(particle[over])
            else:
                # Pins stay put within a call, so a particle can be past a slot's limit now only if some slot
                # projected it since this slot last looked at it (in the previous pass or earlier in this one): the
                # passes after the first check those alone, with the same arithmetic, so the result is the full
                # sweep's. On the 64 x 64 lab cloth resting on its sphere a call runs ~6 passes of 2 slots over
                # 4094 particles each, of which ~50 move.
                previous, projected = projected, []
                for (particle, pin, limit), position in zip(self.slots, self._position):
                    if not previous and not projected:
                        continue
                    ids = np.unique(np.concatenate(previous + projected))
                    rows = position[ids]
                    rows = rows[rows >= 0]
                    if len(rows) == 0:
                        continue
                    ids = particle[rows]
                    anchor = x[pin[rows]]
                    d = (x[ids] - anchor).T
                    length = d[0] * d[0]
                    length += d[2] * d[2]  # the first pass's order: (x^2 + z^2) + y^2
                    length += d[1] * d[1]
                    np.sqrt(length, out=length)
                    lim = limit[rows]
                    over = np.nonzero(length > lim)[0]
                    if len(over):
                        far_past = far_past or bool(np.any(length[over] > 1.001 * lim[over]))
                        x[ids[over]] = anchor[over] + d[:, over].T * (lim[over] / length[over])[:, None]
                        projected.append(ids[over])
            if not far_past or len(self.slots) == 1:
                return

    def _any_past(self, flat) -> bool:
        """Whether any particle is past its limit from any pin, every slot at once at the positions ``flat``
        (x.reshape(-1)); the same arithmetic as a pass, so a pass after False would move nothing."""
        if not self.slots:
            return False
        p, anchor, length = self._all_scratch
        np.take(flat, self._all_gather, out=p, mode="clip")
        np.take(flat, self._all_pin, out=anchor, mode="clip")
        np.subtract(p, anchor, out=p)
        np.multiply(p, p, out=p)
        np.add(p[0], p[2], out=length)
        np.add(length, p[1], out=length)
        np.sqrt(length, out=length)
        return bool(np.any(length > self._all_limit))

    def apply_reference(self, x: np.ndarray, passes: int = 3) -> None:
        """``apply`` row by row (arrays of shape (t, 3)): the form before the structure-of-arrays kernel, kept as
        the reference of tests/test_kernels.py and for non-contiguous x."""
        for _ in range(passes):
            far_past = False
            for particle, pin, limit in self.slots:
                d = x[particle] - x[pin]
                length = np.sqrt(np.einsum("ij,ij->i", d, d))
                over = np.nonzero(length > limit)[0]
                if len(over):
                    far_past = far_past or bool(np.any(length[over] > 1.001 * limit[over]))
                    x[particle[over]] = x[pin[over]] + d[over] * (limit[over] / length[over])[:, None]
            if not far_past or len(self.slots) == 1:
                return
