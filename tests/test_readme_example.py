"""README.md's scripting example, run as written through bpy, produces what the README says it does.

The code is taken from README.md itself (the first ```python block after the "Scripting" heading), so the
README cannot drift from working code. The only change made to it is its Cache Folder, pointed at a temporary
folder of this test. The checks are the physical result the README describes, read as a user's script reads
it (API.md, "Reading results"): every body stays above the ground and outside the sphere at every frame (to a
millimetre), the cloth comes down onto them, and the solid lands on the ground keeping its volume.
"""
import os
import re
import tempfile

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
TOLERANCE = 1e-3  # m: how far a vertex may be inside a collider (float32 positions, 1 mm)


def readme_example(path=README) -> str:
    """The first ```python block after the README's "Scripting" heading."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    heading = re.search(r"^#+ .*Scripting.*$", text, re.MULTILINE)
    assert heading, "README.md has no heading containing 'Scripting'"
    block = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL).search(text, heading.end())
    assert block, "README.md has no ```python block after its Scripting heading"
    return block.group(1)


def with_cache_dir(code: str, folder: str) -> str:
    """``code`` with its Cache Folder assignment (if any) pointed at ``folder``; nothing else changes."""
    return re.sub(r"^(\s*scene\.softsim\.cache_dir\s*=).*$", lambda m: f"{m.group(1)} {folder!r}", code, flags=re.MULTILINE)


def world_positions(obj, depsgraph):
    """World-space positions (n, 3) [m] of ``obj``'s evaluated mesh at the current frame."""
    mesh = obj.evaluated_get(depsgraph).data
    local = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", local)
    m = np.array(obj.matrix_world)
    return local.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def closed_volume(obj, depsgraph, x):
    """Volume [m^3] enclosed by ``obj``'s evaluated surface at world positions ``x`` (divergence theorem)."""
    mesh = obj.evaluated_get(depsgraph).data
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, np.int64)
    mesh.loop_triangles.foreach_get("vertices", tris)
    a, b, c = (x[tris.reshape(-1, 3)[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


def record(scene):
    """Every frame's world positions of every body, and the colliders, after the example has run."""
    objects = list(scene.objects)
    bodies = [o for o in objects if o.softsim.role in ("CLOTH", "SOLID")]
    grounds = [o for o in objects if o.softsim.role == "GROUND"]
    spheres = [o for o in objects if o.softsim.role == "SPHERE"]
    frames = {o.name: [] for o in bodies}
    volumes = {o.name: [] for o in bodies if o.softsim.role == "SOLID"}
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for obj in bodies:
            x = world_positions(obj, depsgraph)
            frames[obj.name].append(x)
            if obj.name in volumes:
                volumes[obj.name].append(closed_volume(obj, depsgraph, x))
    return bodies, grounds, spheres, frames, volumes


def height_above(ground, x):
    """Signed distance [m] of points ``x`` (n, 3) above ``ground``'s plane (its local XY plane, normal +Z)."""
    m = np.array(ground.matrix_world)
    normal = m[:3, 2] / np.linalg.norm(m[:3, 2])
    return (x - m[:3, 3]) @ normal


def check(scene):
    """Assert the README's promise on the scene the example left behind."""
    bodies, grounds, spheres, frames, volumes = record(scene)
    roles = sorted({o.softsim.role for o in bodies})
    assert roles == ["CLOTH", "SOLID"], f"the example should bake a cloth and a solid, got {roles}"
    assert grounds and spheres, "the example should have a Ground and a Sphere collider"
    for obj in bodies:
        for k, x in enumerate(frames[obj.name]):
            for ground in grounds:
                lowest = height_above(ground, x).min()
                assert lowest >= -TOLERANCE, (
                    f"{obj.name} is {-lowest * 1000:.1f} mm below {ground.name} at frame {scene.frame_start + k}")
            for sphere in spheres:
                radius = 0.5 * max(sphere.dimensions)
                inside = radius - np.linalg.norm(x - np.array(sphere.matrix_world.translation), axis=1).min()
                assert inside <= TOLERANCE, (
                    f"{obj.name} is {inside * 1000:.1f} mm inside {sphere.name} at frame {scene.frame_start + k}")
        first, last = frames[obj.name][0], frames[obj.name][-1]
        # It came down: the centre fell by at least 20 cm, and it ends on the ground (within 5 cm of it).
        assert last[:, 2].mean() < first[:, 2].mean() - 0.2, f"{obj.name} did not come down"
        assert min(height_above(g, last).min() for g in grounds) < 0.05, f"{obj.name} did not reach the ground"
    for name, volume in volumes.items():
        change = np.abs(np.array(volume) / volume[0] - 1.0).max()
        assert change < 0.03, f"{name}'s volume changed by {change:.1%}"


def test_readme_scripting_example_does_what_the_readme_says(addon):
    code = readme_example()
    folder = tempfile.mkdtemp(prefix="softsim-readme-")
    exec(compile(with_cache_dir(code, folder), "README.md (Scripting)", "exec"), {"__name__": "__main__"})
    scene = bpy.context.scene
    assert scene.frame_end - scene.frame_start <= 30, "keep the README example short (at most 30 frames)"
    check(scene)
    # Its PC2 files went where the Cache Folder says, and the modifiers play them.
    for obj in scene.objects:
        if obj.softsim.role in ("CLOTH", "SOLID"):
            path = bpy.path.abspath(obj.modifiers["SoftSim Cache"].filepath)
            assert os.path.dirname(os.path.normpath(path)) == os.path.normpath(folder)
            assert os.path.getsize(path) > 0


def test_readme_is_a_user_guide():
    """The README stays short enough to read and free of work history; measured tables live in docs/benchmarks.md."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert len(text) <= 20000, len(text)
    assert not re.search(r"\bsession \d|\bissue \d|\bseed 00\d", text, re.IGNORECASE)
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)\)", text):
        assert os.path.exists(os.path.join(os.path.dirname(README), link)), link
