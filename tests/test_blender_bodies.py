"""Bodies meeting each other in a bake: a soft cube dropped into a cloth hammock, as a user sets it up."""
import numpy as np
import pytest
from scipy.spatial import Delaunay

bpy = pytest.importorskip("bpy")

from blender_helpers import hammock_scene, world_positions as world  # noqa: E402

FRAMES = 16


@pytest.mark.parametrize("solver, cube_solver", [("XPBD", "XPBD"), ("PROJECTIVE", "PROJECTIVE"), ("XPBD", "NEWTON"),
                                                 ("NEWTON", "NEWTON")])
def test_a_soft_cube_dropped_into_a_hammock_is_held_by_it(addon, solver, cube_solver):
    """The hammock holds the cube on the same solver (lockstep substeps, shared contact; NEWTON: one system), and a
    NEWTON cube in an XPBD cloth (stepped first with the cloth as a mesh collider, its barrier's reaction loading it). No cloth vertex gets inside the cube
    as drawn (the hull of its 8 corners), though its finer tet boundary dents under the cloth between the corners."""
    scene, cloth, cube = hammock_scene(FRAMES, solver=solver, cube_solver=cube_solver)
    job = addon.operators.bake.run_bake(bpy.context, [cloth, cube])
    for frame in range(1, FRAMES + 1):
        box, sheet = world(cube, frame), world(cloth, frame)
        assert box[:, 2].min() > 0.2, f"frame {frame}: the cube fell to z = {box[:, 2].min():.2f} m"
        inside = Delaunay(box).find_simplex(sheet) >= 0
        assert not inside.any(), f"frame {frame}: {inside.sum()} cloth vertices inside the cube"
    # It lies in the hammock: the cloth under it is pressed down below the pins.
    assert sheet[:, 2].min() < 1.45 and box[:, 2].min() > sheet[:, 2].min()
    assert "in contact with each other: 'Hammock', 'Jelly'" in job.summary
    assert not job.notes


@pytest.mark.parametrize("cube_solver", ["XPBD", "NEWTON"])
def test_live_playback_of_bodies_meets_as_the_bake_does(addon, cube_solver):
    """Played forward frame by frame, the cube and the hammock are simulated together (the cube lands in the cloth
    and no cloth vertex gets inside it), frame for frame as the bake of both gives them."""
    frames = 14
    scene, cloth, cube = hammock_scene(frames, cube_solver=cube_solver)
    live = []
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        live.append((world(cloth), world(cube)))
    box, sheet = live[-1][1], live[-1][0]
    assert box[:, 2].min() < 1.5, "the cube has not reached the cloth: the test shows nothing"
    assert not (Delaunay(box).find_simplex(sheet) >= 0).any()
    addon.operators.bake.run_bake(bpy.context, [cloth, cube])
    for frame, (sheet, box) in enumerate(live, start=1):
        assert np.allclose(world(cloth, frame), sheet, atol=1e-5), frame
        assert np.allclose(world(cube, frame), box, atol=1e-5), frame
