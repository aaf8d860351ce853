"""solvers/ is the pure engine: it must import without Blender and never reach into the add-on."""
import ast
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORBIDDEN = {"bpy", "mathutils", "bmesh", "bpy_extras", "gpu", "bgl"}


def solver_sources():
    for folder, _, files in os.walk(os.path.join(ROOT, "solvers")):
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def test_solvers_import_no_blender_module_and_nothing_above_the_package():
    offenders = []
    for path in solver_sources():
        depth = os.path.relpath(os.path.dirname(path), ROOT).count(os.sep)  # 0 for solvers/, 1 below it
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level > depth + 1:
                    offenders.append(f"{path}: relative import above solvers/")
                names = [node.module.split(".")[0]] if node.module and node.level == 0 else []
            else:
                continue
            offenders += [f"{path}: imports {n}" for n in names if n in FORBIDDEN]
    assert offenders == []


def test_solvers_import_in_a_plain_python_without_bpy():
    code = "import sys; import solvers; assert 'bpy' not in sys.modules and 'mathutils' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
