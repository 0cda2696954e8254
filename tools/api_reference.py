"""docs/api.md: every public name of bert_tf's user-facing packages, from the code itself.

For each package of `PACKAGES`, each name of its `__all__` (sorted) with what it is (class, function, constant),
the module that defines it (its file, which the documentation's path check reads), its signature
(`inspect.signature`; a constant's value where it is short) and the first sentence of its docstring (a
constant's comment: the `#` lines just above its assignment or the one ending it). The output is the same on
every run of the same code: no object addresses, sets in sorted order.

    python tools/api_reference.py --write     # rewrites docs/api.md
    python tools/api_reference.py             # prints it

tests/docs/api_reference_test.py fails when docs/api.md differs from a fresh run, so rerun it (`--write`) after
changing a public name, a signature or a first docstring line.
"""

import ast
import enum
import functools
import importlib
import inspect
import os
import re
import sys

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_MD = os.path.join(ROOT, "docs", "api.md")
PACKAGES = ("text", "models", "checkpoints", "tasks", "training", "export", "embeddings")
_MAX_VALUE = 100  # a constant's repr longer than this is left out (its type stays)
_WRAP = 100  # a signature longer than this is written one parameter per line

FLAGS = flags.FLAGS
if __name__ == "__main__":
    flags.DEFINE_bool("write", False, f"Write {os.path.relpath(API_MD, ROOT)} instead of printing the reference.")


def _first_sentence(text):
    """The first sentence of a docstring's first paragraph, its lines joined ('' without one)."""
    paragraph = inspect.cleandoc(text or "").split("\n\n")[0]
    paragraph = " ".join(line.strip() for line in paragraph.splitlines()).strip()
    # A sentence ends at '.', '!' or '?' before a space and a capital or a backquote, outside `code`.
    depth = 0
    for i, char in enumerate(paragraph):
        if char == "`":
            depth ^= 1
        elif char in ".!?" and not depth and re.match(r" +[A-Z`(\"]", paragraph[i + 1 :]):
            return paragraph[: i + 1]
    return paragraph


def _clean(text):
    """A repr without the object addresses that change from run to run."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def _value_repr(value):
    """A short, stable repr of a constant's value; None where it would be long or run-dependent."""
    if isinstance(value, (set, frozenset)):
        text = "{" + ", ".join(sorted(repr(item) for item in value)) + "}"
        text = f"frozenset({text})" if isinstance(value, frozenset) else text
    elif isinstance(value, (str, int, float, bool, tuple, list, dict)) or value is None:
        text = repr(value)
    else:
        return None
    return text if len(text) <= _MAX_VALUE and " at 0x" not in text else None


def _signature(name, obj):
    """`name(parameters)` (a class's constructor's), wrapped one parameter per line when long; None if none."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parameters = [_clean(str(parameter)) for parameter in signature.parameters.values()]
    text = f"{name}({', '.join(parameters)})"
    if len(text) > _WRAP:
        text = f"{name}(\n" + "".join(f"    {parameter},\n" for parameter in parameters) + ")"
    return text


def _module_files(package):
    """The .py files of a package, in path order."""
    directory = os.path.join(ROOT, *package.split("."))
    found = []
    for folder, subfolders, files in os.walk(directory):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        found += [os.path.join(folder, name) for name in sorted(files) if name.endswith(".py")]
    return sorted(found)


def _assignment(package, name):
    """`(file, comment)` of the module-level assignment of `name` in the package (its __init__ last): the file's
    path relative to the repository, and the comment just above it or at its end; None if none assigns it."""
    files = _module_files(package)
    init = [path for path in files if os.path.basename(path) == "__init__.py" and os.path.dirname(path)]
    for path in [p for p in files if p not in init[:1]] + init[:1]:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        lines = source.splitlines()
        for node in ast.parse(source, path).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                comment = []
                row = node.lineno - 2
                while row >= 0 and lines[row].lstrip().startswith("#"):
                    comment.insert(0, lines[row].strip().lstrip("#").strip())
                    row -= 1
                end = lines[node.end_lineno - 1]
                if not comment and "#" in end:
                    comment = [end.split("#", 1)[1].strip()]
                return os.path.relpath(path, ROOT), " ".join(comment)
    return None


def _module_file(module_name):
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return os.path.relpath(path, ROOT) if path else None


def _kind(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return "exception"
        if issubclass(obj, enum.Enum):
            return "enum"
        return "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    if callable(obj) and hasattr(obj, "__wrapped__"):
        return "function"
    return "constant"


def entry(package, name):
    """One public name as a dict: name, kind, module (dotted), file, signature (or value), summary."""
    module = importlib.import_module(package)
    obj = getattr(module, name)
    kind = _kind(obj)
    if kind == "constant":
        found = _assignment(package, name) or _assignment("bert_tf", name)  # a re-export from another package
        path, comment = found if found else (None, "")
        value = _value_repr(obj)
        shown = f"{name} = {value}" if value is not None else f"{name}: {type(obj).__name__}"
        return {"name": name, "kind": kind, "file": path, "signature": shown, "summary": _first_sentence(comment)}
    if kind == "module":
        return {
            "name": name,
            "kind": kind,
            "file": _module_file(obj.__name__),
            "signature": obj.__name__,
            "summary": _first_sentence(obj.__doc__),
        }
    defined_in = getattr(obj, "__module__", None) or package
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""  # a class's own (`__doc__` is not inherited)
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
        doc = ""  # the signature that `dataclasses` writes for a class without a docstring
    return {
        "name": name,
        "kind": kind,
        "file": _module_file(defined_in),
        "signature": _signature(name, obj) or name,
        "summary": _first_sentence(doc),
    }


@functools.cache
def package_entries(package):
    module = importlib.import_module(package)
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"{package} has no __all__: its public names are not declared")
    return tuple(entry(package, name) for name in sorted(set(names), key=lambda n: (n.lower(), n)))


def render():
    """docs/api.md's text."""
    out = [
        "# API reference",
        "",
        "Generated from the code by `python tools/api_reference.py --write`; do not edit it by hand",
        "(`tests/docs/api_reference_test.py` fails when it is stale). Every public name (`__all__`) of the",
        "user-facing packages, with the file that defines it, its signature (a constant's value) and the first",
        "sentence of its docstring (a constant's comment). [library.md](library.md) shows them at work.",
        "",
    ]
    out += [f"- [`bert_tf.{package}`](#bert_tf{package})" for package in PACKAGES]
    for package in PACKAGES:
        dotted = f"bert_tf.{package}"
        module = importlib.import_module(dotted)
        out += ["", f"## {dotted}", "", _first_sentence(module.__doc__) or "", ""]
        for item in package_entries(dotted):
            where = f"`{item['file']}`" if item["file"] else "(no assignment found in bert_tf)"
            out.append(f"### `{item['name']}`")
            out.append("")
            out.append(f"{item['kind']} in {where}")
            out.append("")
            signature = item["signature"]
            if "\n" in signature:
                out += ["    " + line for line in signature.splitlines()]
            else:
                out.append(f"    {signature}")
            out.append("")
            if item["summary"] or item["kind"] != "constant":
                out += [item["summary"] or "(no docstring)", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv):
    del argv
    text = render()
    if FLAGS.write:
        with open(API_MD, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(API_MD, ROOT)} ({text.count(chr(10))} lines)")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    app.run(main)
