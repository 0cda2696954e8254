"""tools/ is one package: its scripts import each other as `tools.NAME`, and only their bootstrap touches sys.path."""

import ast
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools")
# The scripts run as `python tools/NAME.py` (or tools/references/NAME.py); tools/bench/ holds modules only.
SCRIPTS = sorted(
    path
    for path in glob.glob(os.path.join(TOOLS, "*.py")) + glob.glob(os.path.join(TOOLS, "references", "*.py"))
    if not path.endswith("__init__.py")
)


def _tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def _is_bootstrap(node):
    """`if not __package__:` at module level: the only place a script may change sys.path."""
    test = node.test if isinstance(node, ast.If) else None
    return (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.Name)
        and test.operand.id == "__package__"
    )


def test_tools_import_each_other_by_package_name_only():
    siblings = {os.path.splitext(os.path.basename(path))[0] for path in SCRIPTS}
    for path in sorted(glob.glob(os.path.join(TOOLS, "**", "*.py"), recursive=True)):
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            bare = [name for name in names if name.split(".")[0] in siblings]
            assert not bare, f"{os.path.relpath(path, ROOT)}:{node.lineno}: import tools.{bare[0]}, not {bare[0]}"


def test_only_the_bootstrap_touches_sys_path_and_every_script_importing_tools_has_it():
    for path in sorted(glob.glob(os.path.join(TOOLS, "**", "*.py"), recursive=True)):
        tree = _tree(path)
        allowed = {id(n) for b in tree.body if _is_bootstrap(b) for n in ast.walk(b)}
        name = os.path.relpath(path, ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys":
                assert id(node) in allowed, (
                    f"{name}:{node.lineno}: sys.path outside the `if not __package__:` bootstrap"
                )
        imports_tools = any(
            isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "tools"
            for node in ast.walk(tree)
        )
        if path in SCRIPTS and imports_tools:
            assert any(_is_bootstrap(node) for node in tree.body), f"{name} imports tools.* but has no bootstrap"
