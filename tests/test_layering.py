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


def package_modules(package, root=ROOT):
    """{dotted module name: source path} of every module of ``package`` (a folder of ``root``); a package's
    __init__.py is the package itself."""
    modules = {}
    for folder, _, files in os.walk(os.path.join(root, package)):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[:-3].split(os.sep)
                modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(package, root=ROOT):
    """{module: set of modules of ``package`` it imports}, from the AST, function-level imports included.

    ``from X import name`` depends on X.name when that is a module, else on X. Importing a.b.c runs the packages
    a and a.b first, so an import also depends on every package above its target, except the packages the
    importing module lies in (they are already being imported when it runs)."""
    modules = package_modules(package, root)
    graph = {}
    for module, path in modules.items():
        is_package = path.endswith("__init__.py")
        here = module.split(".") if is_package else module.split(".")[:-1]  # the package relative imports start from
        targets = set()
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    base = (node.module or "").split(".")
                else:
                    base = here[:len(here) - (node.level - 1)] + (node.module.split(".") if node.module else [])
                for alias in node.names:
                    child = ".".join(base + [alias.name])
                    targets.add(child if child in modules else ".".join(base))
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        edges = set()
        for target in targets:
            parts = target.split(".")
            for k in range(1, len(parts) + 1):
                name = ".".join(parts[:k])
                if name in modules and name != module and not (module + ".").startswith(name + "."):
                    edges.add(name)
        graph[module] = edges
    return graph


def find_cycle(graph):
    """One import cycle as a list of modules (first == last), or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_import_graph_sees_function_level_and_package_imports(tmp_path):
    """The graph the cycle test checks, on a small package: a function-level import is an edge, so is the package a
    submodule import runs first, and a circle through them is found."""
    files = {
        "pkg/__init__.py": "from . import a\n",
        "pkg/a.py": "import os\n\n\ndef f():\n    from .b import g  # late import\n",
        "pkg/b.py": "from .sub.thing import h\n\n\ndef g():\n    pass\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/thing.py": "from .. import a\nfrom . import other\n",
        "pkg/sub/other.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph("pkg", str(tmp_path))
    assert graph == {"pkg": {"pkg.a"}, "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.sub", "pkg.sub.thing"},
                     "pkg.sub": set(), "pkg.sub.thing": {"pkg.a", "pkg.sub.other"}, "pkg.sub.other": set()}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.sub.thing", "pkg.a"]
    del graph["pkg.sub.thing"]
    assert find_cycle(graph) is None


def test_operators_have_no_import_cycle():
    """No module of operators/ imports, even inside a function, one that imports it back (directly or around a
    longer circle): each layer is importable on its own, and a circle cut by a late import breaks as soon as
    someone moves that import to the top."""
    cycle = find_cycle(import_graph("operators"))
    assert cycle is None, " -> ".join(cycle)
