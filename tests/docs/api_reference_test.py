"""docs/api.md names every public name of the user-facing packages and equals a fresh run of its generator.

tools/api_reference.py writes it from the code (`python tools/api_reference.py --write`); a public name added,
renamed or removed, a changed signature or first docstring sentence makes the page stale until it runs again.
"""

import importlib
import os
import re

from tools import api_reference

API_MD = api_reference.API_MD


def _page():
    with open(API_MD, encoding="utf-8") as f:
        return f.read()


def _sections(text):
    """{package: [names of its ### headings]} of the page."""
    sections, current = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        elif line.startswith("### ") and current is not None:
            current.append(line[4:].strip().strip("`"))
    return sections


def test_every_public_name_is_in_the_api_reference():
    sections = _sections(_page())
    for package in api_reference.PACKAGES:
        dotted = f"bert_tf.{package}"
        assert dotted in sections, f"docs/api.md has no section {dotted}: run python tools/api_reference.py --write"
        missing = sorted(set(importlib.import_module(dotted).__all__) - set(sections[dotted]))
        assert not missing, f"docs/api.md lacks {dotted}'s {missing}: run python tools/api_reference.py --write"


def test_api_reference_is_up_to_date():
    fresh = api_reference.render()
    assert _page() == fresh, (
        "docs/api.md differs from the code's docstrings and signatures: run python tools/api_reference.py --write"
    )


def test_every_public_class_and_function_has_a_docstring():
    """The reference's summary line is the docstring's first sentence: a public class or function without one
    would be listed as '(no docstring)'."""
    bare = [
        f"bert_tf.{package}.{item['name']}"
        for package in api_reference.PACKAGES
        for item in api_reference.package_entries(f"bert_tf.{package}")
        if item["kind"] != "constant" and not item["summary"]
    ]
    assert not bare, f"public names without a docstring: {bare}"


def test_the_reference_names_existing_files():
    for path in sorted(set(re.findall(r"in `(bert_tf/[^`]+\.py)`", _page()))):
        assert os.path.isfile(os.path.join(api_reference.ROOT, path)), f"docs/api.md names {path}: no such file"
