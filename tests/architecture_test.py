"""The package layers of docs/ARCHITECTURE.md hold: imports point down only, no file-level circle, and exporting
and serving a model loads nothing of `bert_tf.training`.

The import graph is read from the source with `ast`: every `import` and
`from ... import` (at module level and inside functions), every
`importlib.import_module("bert_tf...")` call with a literal name and, in a
module that calls `import_module` with a computed name, every string of the
form "bert_tf.x.y" (or "bert_tf.x.y:Name") it holds.
"""

import ast
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "bert_tf")

# The layers, lowest first (docs/ARCHITECTURE.md, "Packages"). A module may import its own package and any package
# of a lower layer; packages of one layer do not import each other. "bert_tf" is the root `__init__`.
LAYERS = (
    ("config",),
    ("bert_tf",),
    ("metrics",),
    ("text",),
    ("layers",),
    ("models",),
    ("data",),
    ("objectives",),
    ("checkpoints",),
    ("embeddings",),
    ("serving",),
    ("tasks",),
    ("training", "export"),
    ("apps",),
)
LAYER = {package: level for level, packages in enumerate(LAYERS) for package in packages}


def _modules():
    """`{dotted module name: path}` of every module of bert_tf (a package is its `__init__`)."""
    modules = {}
    for directory, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, ROOT)[: -len(".py")].replace(os.sep, ".")
                modules[dotted.removesuffix(".__init__")] = path
    return modules


MODULES = _modules()


def _known(name):
    """The module `name` names, or its nearest enclosing package that is one (`bert_tf.x.Class` -> `bert_tf.x`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _is_module_reference(value):
    head, _, attribute = value.partition(":")
    parts = head.split(".")
    return parts[0] == "bert_tf" and len(parts) > 1 and all(p.isidentifier() for p in parts + [attribute or "x"])


def imports_of(module):
    """The bert_tf modules `module` imports (module level and inside functions, static and `import_module`)."""
    path = MODULES[module]
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    found, computed = set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_known(alias.name) for alias in node.names if alias.name.split(".")[0] == "bert_tf")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if base.split(".")[0] != "bert_tf":
                continue
            for alias in node.names:  # `from bert_tf.tasks import registry` imports the submodule
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in MODULES else _known(base))
        elif isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if name in ("import_module", "__import__"):
                argument = node.args[0] if node.args else None
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                    if argument.value.split(".")[0] == "bert_tf":
                        found.add(_known(argument.value))
                else:
                    computed = True
    if computed:  # the names it may import are strings somewhere in the module
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _is_module_reference(node.value):
                found.add(_known(node.value.partition(":")[0]))
    found.discard(module)
    found.discard("")
    return found


def package_of(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "bert_tf"


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_package_has_a_layer():
    assert sorted({package_of(module) for module in MODULES} - set(LAYER)) == []


def test_no_package_imports_one_above_it_or_beside_it():
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if package_of(target) != package_of(module) and LAYER[package_of(target)] >= LAYER[package_of(module)]
    )
    assert wrong == [], "imports pointing up (or across) the layers of docs/ARCHITECTURE.md"


def test_no_file_level_circle():
    # Tarjan's strongly connected components: a component of more than one module is a circle.
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert circles == []


def test_the_graph_reader_sees_every_kind_of_import():
    assert "bert_tf.tasks.registry" in GRAPH["bert_tf.tasks.classification"]  # from bert_tf.tasks import registry
    assert "bert_tf.layers.execution_path" in GRAPH["bert_tf.training.distribute"]  # inside a function
    assert "bert_tf.models.deberta_v2_encoder" in GRAPH["bert_tf.models.encoders"]  # import_module("module:Class")


EXPORT_AND_SERVE = textwrap.dedent(
    """
    import sys

    from bert_tf.export import export_saved_model

    import tensorflow as tf
    from bert_tf.models import BertClassifier
    from tests.helpers import tiny_model_dir

    root = sys.argv[1]
    model_dir = tiny_model_dir(
        root + "/model", ["good", "bad", "film"], 16, model_fn=lambda encoder: BertClassifier(encoder, 2),
        task="classification", labels=["neg", "pos"],
    )
    metadata = export_saved_model(model_dir, root + "/serving/1")
    served = tf.saved_model.load(root + "/serving/1").signatures["serving_default"](text=tf.constant(["good film"]))
    print(metadata["kind"], [label.decode() for label in served["label"].numpy()][0] in ("neg", "pos"))
    print(sorted(name for name in sys.modules if name.startswith("bert_tf.training")))
    """
)


def test_exporting_and_serving_loads_nothing_of_training(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", EXPORT_AND_SERVE, str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    served, training = result.stdout.strip().splitlines()[-2:]
    assert served == "classification True"
    assert training == "[]"
