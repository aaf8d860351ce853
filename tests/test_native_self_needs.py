"""``self_kernels.SelfSelect.needs``: after a select, each element's largest motion since the list's build plus its
largest motion in the step, bit for bit what ``SelfBroadPhase._grow`` computes from the particles' values (the skin
growth of the native path reads them instead of recomputing them); None after the fail-safe's witnesses, whose scratch
is another. The lists the two paths grow from them are equal (tests/test_native_self_select.py compares whole lists,
skins too, over growths and rebuilds)."""
import numpy as np
import pytest

from native_helpers import native_library
from solvers.collision.broad_phase.self_pairs import _row_max
from solvers.native.selftest import self_list_scene
from solvers.native.self_kernels import SelfSelect


@pytest.fixture(scope="module")
def library():
    return native_library()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_needs_are_the_twins_moved_plus_motion_per_element(library, seed):
    x, sc, _, _ = self_list_scene(seed=seed)
    select = SelfSelect(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    rng = np.random.default_rng(seed)
    x_prev = x + rng.normal(scale=0.01, size=x.shape)
    x_now = np.ascontiguousarray(x + rng.normal(scale=0.02 * seed, size=x.shape))
    holds = select.select(x_now, np.ascontiguousarray(x_prev), sc._list, sc.thickness) is not None
    needs = select.needs()
    moved, motion = select.moved, select.motion
    want = (moved + motion, _row_max(moved, sc.triangles) + _row_max(motion, sc.triangles),
            _row_max(moved, sc.edges) + _row_max(motion, sc.edges))
    for mine, theirs in zip(needs, want):
        np.testing.assert_array_equal(mine, theirs)
    assert not holds  # a list that does not hold: what _grow then reads
    select.witnesses(x_now, np.ascontiguousarray(x_prev), sc._list)
    assert select.needs() is None


def test_needs_before_any_select_are_none(library):
    x, sc, _, _ = self_list_scene()
    select = SelfSelect(library, np.ascontiguousarray(sc.triangles), np.ascontiguousarray(sc.edges), len(x))
    assert select.needs() is None
