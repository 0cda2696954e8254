"""The package layers of docs/ARCHITECTURE.md hold: imports point down only, no file-level circle, no task list
outside bert_tf/tasks, and the read-only apps (bert-tf-export, -embed, -convert) and serving a model load nothing
of `bert_tf.training`.

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
    ("config", "options"),  # options: how run options are declared (no TensorFlow)
    ("bert_tf",),
    ("metrics",),
    ("text",),
    ("layers",),
    ("models", "data"),  # models know nothing of data, data nothing of models
    ("objectives",),
    ("checkpoints",),
    ("embeddings",),
    ("serving",),
    ("tasks",),
    ("training", "export"),
    ("beam",),  # bert_tf.beam: Apache Beam's RunInference over embeddings (and an export's SavedModel)
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


def _task_names():
    """The names of the built-in tasks, read from the `Task(name=...)` declarations of bert_tf/tasks/."""
    names = set()
    for module, path in MODULES.items():
        if package_of(module) == "tasks":
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Task":
                    names.update(k.value.value for k in node.keywords if k.arg == "name")
    return names


def _tokenizer_kind_names():
    """The names of the built-in tokenizer kinds, read from the `TokenizerKind(name=...)` declarations of
    bert_tf/text/."""
    names = set()
    for module, path in MODULES.items():
        if package_of(module) == "text":
            for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
                if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == (
                    "TokenizerKind"
                ):
                    names.update(k.value.value for k in node.keywords if k.arg == "name")
    return names


def test_the_tokenizer_files_ask_the_kinds_registry():
    # No switch on a kind's name in checkpoints/tokenizer_files.py: it asks `bert_tf.text.kinds` (docstrings may
    # name the kinds).
    kinds = _tokenizer_kind_names()
    assert kinds == {"wordpiece", "bpe", "sentencepiece"}
    tree = ast.parse(open(MODULES["bert_tf.checkpoints.tokenizer_files"], encoding="utf-8").read())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
        if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    named = sorted(
        f"line {node.lineno}: {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in kinds and id(node) not in docstrings
    )
    assert named == []


# Lists of task-name strings outside bert_tf/tasks that are not lists of tasks: the label kinds of sentence data
# (string labels to ids, or float scores) and of the GLUE metrics, which exist below the tasks (data, metrics).
# `__all__` names modules (`bert_tf.data.classification`), not tasks.
NOT_TASK_LISTS = {("bert_tf.metrics", "GLUE_TASKS"), ("bert_tf.data.classification", "TASKS")}
NOT_TASK_LIST_NAMES = {"__all__"}


def test_no_module_outside_tasks_lists_task_names():
    task_names = _task_names()
    assert {"classification", "regression", "ner", "squad", "embedding"} <= task_names
    lists = []
    for module, path in MODULES.items():
        if package_of(module) == "tasks":
            continue
        tree = ast.parse(open(path, encoding="utf-8").read(), path)
        named = {}  # the node of each module-level `NAME = (...)`
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                named[id(node.value)] = node.targets[0].id
        for node in ast.walk(tree):
            elements = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or elements is None:
                continue
            strings = {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            name = named.get(id(node))
            if name in NOT_TASK_LIST_NAMES or (module, name) in NOT_TASK_LISTS:
                continue
            if len(strings & task_names) >= 2:
                lists.append(f"{module}:{node.lineno} {sorted(strings & task_names)}")
    assert lists == [], "task names listed outside bert_tf/tasks (ask bert_tf.tasks: names(), Task fields)"


def test_config_and_metrics_import_no_tensorflow():
    for module in ("bert_tf.config", "bert_tf.metrics"):
        tree = ast.parse(open(MODULES[module], encoding="utf-8").read())
        imported = {
            alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        imported |= {
            node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
        }
        assert not imported & {"tensorflow", "keras", "tensorflow_text"}, module


def test_litert_runtime_imports_the_standard_library_only():
    # Serving processes load it by its path beside ai-edge-litert alone (no TensorFlow, no bert_tf).
    tree = ast.parse(open(MODULES["bert_tf.export.litert_runtime"], encoding="utf-8").read())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported and imported <= set(sys.stdlib_module_names), sorted(imported - set(sys.stdlib_module_names))


# The imports inside functions (module, imported top-level name): optional or heavy dependencies one code path needs,
# and the apps' start-up, which sets TensorFlow's log level before TensorFlow is imported.
LAZY_IMPORTS = {
    ("bert_tf.apps.launch", "absl"),
    ("bert_tf.apps.launch", "tensorflow"),
    ("bert_tf.apps.embed", "bert_tf"),  # bert_tf.beam (Apache Beam, the [beam] extra) only with --runner
    ("bert_tf.beam", "pyarrow"),  # Parquet input and output only
    ("bert_tf.embeddings.embed_file", "pyarrow"),  # reading a Beam run's Parquet shards only
    ("bert_tf.checkpoints.hub", "huggingface_hub"),  # a Hub id only: a local path never imports it (0.3 s)
    ("bert_tf.checkpoints.readers", "torch"),  # pickle checkpoints, opt-in (allow_pickle)
    ("bert_tf.data.tfds_inputs", "tensorflow_datasets"),  # `tfds:` inputs only
    ("bert_tf.export.onnx", "onnx"),  # the `bert_tf[onnx]` extra, ONNX export only
    ("bert_tf.export.onnx", "onnxruntime"),
    ("bert_tf.export.onnx", "tf2onnx"),
    ("bert_tf.training.distribute", "bert_tf"),  # `resolve_dtype` reads layers.execution_path's rules
}


def test_imports_inside_functions_are_the_listed_ones():
    found = set()
    for module, path in MODULES.items():
        for function in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, ast.Import):
                        found.update((module, alias.name.split(".")[0]) for alias in node.names)
                    elif isinstance(node, ast.ImportFrom) and node.module:
                        found.add((module, node.module.split(".")[0]))
    assert found == LAZY_IMPORTS


def test_no_private_name_is_imported_across_modules():
    private = sorted(
        f"{module}: from {node.module} import {alias.name}"
        for module, path in MODULES.items()
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bert_tf")
        for alias in node.names
        if alias.name.startswith("_")
    )
    assert private == []


# The read-only apps, run as their commands run them (bert-tf-convert, bert-tf-embed, bert-tf-export, each also
# `python -m bert_tf.apps.NAME`), in a fresh interpreter (not the tests' zygote, which preloads all of bert_tf): none
# of them, nor serving what bert-tf-export wrote, loads a module of `bert_tf.training`.
READ_ONLY_APPS = textwrap.dedent(
    """
    import sys

    from absl import flags

    from bert_tf.apps import convert, embed, export

    import tensorflow as tf
    from bert_tf.models import BertClassifier
    from tests.helpers import tiny_model_dir


    def run(app, **values):
        argv = [app.__name__] + [f"--{name}={value}" for name, value in values.items()]
        flags.FLAGS.unparse_flags()
        flags.FLAGS(argv)
        return app.main(argv[:1])


    root = sys.argv[1]
    model_dir = tiny_model_dir(
        root + "/model", ["good", "bad", "film"], 16, model_fn=lambda encoder: BertClassifier(encoder, 2),
        task="classification", labels=["neg", "pos"],
    )
    with open(root + "/corpus.txt", "w") as f:
        f.write("good film\\nbad\\n")
    codes = [
        run(convert, input=model_dir, output=root + "/hf", to="hf"),
        run(embed, model_dir=model_dir, input=root + "/corpus.txt", output=root + "/embeddings", max_seq_length=16,
            progress=False),
        run(export, model_dir=model_dir, output_dir=root + "/serving/1"),
    ]
    served = tf.saved_model.load(root + "/serving/1").signatures["serving_default"](text=tf.constant(["good film"]))
    print(codes, [label.decode() for label in served["label"].numpy()][0] in ("neg", "pos"))
    print(sorted(name for name in sys.modules if name.startswith("bert_tf.training")))
    """
)


def test_the_read_only_apps_and_serving_load_nothing_of_training(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", READ_ONLY_APPS, str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    done, training = result.stdout.strip().splitlines()[-2:]
    assert done == "[0, 0, 0] True"  # converted, embedded, exported; the export serves
    assert training == "[]"


def test_only_the_training_apps_import_training():
    # The static side of the test above: which app modules reach bert_tf.training through their imports.
    def reaches_training(module, seen):
        if module in seen:
            return False
        seen.add(module)
        return package_of(module) == "training" or any(reaches_training(t, seen) for t in GRAPH[module])

    apps = sorted(module for module in MODULES if module.startswith("bert_tf.apps."))
    training = [app.removeprefix("bert_tf.apps.") for app in apps if reaches_training(app, set())]
    # multiworker (bert-tf-launch) checks the TF_CONFIG it writes with bert_tf.training.distribute's rules.
    assert training == ["distill", "finetune", "multiworker", "pretrain", "training_errors", "training_flags"]
