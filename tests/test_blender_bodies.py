"""Bodies meeting each other in a bake: a soft cube dropped into a cloth hammock, as a user sets it up."""
import numpy as np
import pytest
from scipy.spatial import Delaunay

bpy = pytest.importorskip("bpy")

from blender_helpers import crossings_between, empty_scene, hammock_scene, world_positions as world  # noqa: E402

FRAMES = 16


@pytest.mark.parametrize("solver, cube_solver", [("XPBD", "XPBD"), ("PROJECTIVE", "PROJECTIVE"), ("XPBD", "NEWTON"),
                                                 ("NEWTON", "NEWTON")])
def test_a_soft_cube_dropped_into_a_hammock_is_held_by_it(addon, solver, cube_solver):
    """The hammock holds the cube on the same solver (lockstep substeps, shared contact; NEWTON: one system), and a
    NEWTON cube in an XPBD cloth (stepped first with the cloth as a mesh collider, its barrier's reaction loading it). No cloth vertex gets inside the cube
    as drawn (the hull of its 8 corners), though its finer tet boundary dents under the cloth between the corners."""
    scene, cloth, cube = hammock_scene(FRAMES, solver=solver, cube_solver=cube_solver)
    if solver == cube_solver == "NEWTON":
        # One Newton system of both bodies: at the default resolution 10 this bake takes a minute; make bench's
        # bodies section bakes that one (72 frames).
        cube.softsim.tet_resolution = 6
    job = addon.operators.bake.run_bake(bpy.context, [cloth, cube])
    for frame in range(1, FRAMES + 1):
        box, sheet = world(cube, frame), world(cloth, frame)
        assert box[:, 2].min() > 0.2, f"frame {frame}: the cube fell to z = {box[:, 2].min():.2f} m"
        inside = Delaunay(box).find_simplex(sheet) >= 0
        assert not inside.any(), f"frame {frame}: {inside.sum()} cloth vertices inside the cube"
        assert crossings_between([cloth, cube], frame) == 0, f"frame {frame}: an edge of one through the other"
    # It lies in the hammock: the cloth under it is pressed down below the pins.
    assert sheet[:, 2].min() < 1.45 and box[:, 2].min() > sheet[:, 2].min()
    assert "in contact with each other: 'Hammock', 'Jelly'" in job.summary
    assert not job.notes


@pytest.mark.parametrize("solver, cube_solver", [("XPBD", "XPBD"), ("XPBD", "NEWTON"), ("NEWTON", "NEWTON")])
def test_live_playback_of_bodies_meets_as_the_bake_does(addon, solver, cube_solver):
    """Played forward frame by frame, the cube and the hammock are simulated together (the cube lands in the cloth
    and no cloth vertex gets inside it), frame for frame as the bake of both gives them."""
    frames = 14
    scene, cloth, cube = hammock_scene(frames, solver=solver, cube_solver=cube_solver)
    if solver == "NEWTON":
        cube.softsim.tet_resolution = 4  # one Newton system of both bodies: the default resolution 10 takes minutes
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


def test_two_cloths_dropped_onto_a_sphere_do_not_pass_through_each_other(addon):
    """Two 3 m cloths (21 x 21, XPBD defaults), one 0.3 m above the other, dropped onto a 1 m sphere: no edge of one
    through a triangle of the other at any frame, and the upper one ends on top of the lower one over the sphere."""
    frames = 14
    scene = empty_scene(frames)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5)
    bpy.context.object.softsim.role = "SPHERE"
    cloths = []
    for name, height in (("Lower", 0.7), ("Upper", 1.0)):
        bpy.ops.mesh.primitive_grid_add(x_subdivisions=20, y_subdivisions=20, size=3.0, location=(0.0, 0.0, height))
        cloth = bpy.context.object
        cloth.name = name
        cloth.softsim.role = "CLOTH"
        cloths.append(cloth)
    addon.operators.bake.run_bake(bpy.context, cloths)
    for frame in range(1, frames + 1):
        assert crossings_between(cloths, frame) == 0, f"frame {frame}"
    lower, upper = (world(c, frames) for c in cloths)
    middle = np.argmin(np.linalg.norm(lower[:, :2], axis=1))  # the vertex over the sphere's top (same in both grids)
    assert lower[middle, 2] < 0.55, "the lower cloth has not reached the sphere: the test shows nothing"
    assert upper[middle, 2] - lower[middle, 2] > 0.005
    assert scene.frame_end == frames


def test_a_newton_system_that_fails_names_its_bodies_and_keeps_the_previous_bakes(addon):
    """A NEWTON cube in a NEWTON hammock (one system) with 1 Newton iteration allowed per step cannot converge: the
    bake stops with a message naming both bodies of the system, and both keep their previous bake."""
    frames = 4
    scene, cloth, cube = hammock_scene(frames, solver="NEWTON", cube_solver="NEWTON")
    addon.operators.bake.run_bake(bpy.context, [cloth, cube])
    before = [world(obj, frames) for obj in (cloth, cube)]
    for obj in (cloth, cube):
        obj.softsim.newton_max_iterations = 1
    with pytest.raises(Exception, match=r"'Hammock' \(solved as one system with 'Jelly'\) did not converge at frame \d+"
                                        r".*the previous bake is kept"):
        addon.operators.bake.run_bake(bpy.context, [cloth, cube])
    for obj, shown in zip((cloth, cube), before):
        assert np.array_equal(world(obj, frames), shown)
