"""No path of the documentation points at nothing.

The pages are README.md and docs/*.md (tests/docs/snippets_test.py's `doc_pages()`, and docs/ARCHITECTURE.md and
the generated docs/api.md, which names the files that define each name; docs/results/ is not checked, its pages are
dated records). Two kinds of path are checked:

- Repository paths: a word starting `bert_tf/`, `tests/`, `tools/`, `docs/`, `configs/` (prose, tables, code
  blocks; not inside a longer path or URL) names a file or folder of the repository, from its top level; a
  `*` in it is a glob that must match; `FILE.py::test` names FILE.py, and `tools/bench/harness.median_rates`
  (a module's attribute) names tools/bench/harness.py; a path right after "e.g." is the example of a file to
  write ("1. Write one file, e.g. `bert_tf/tasks/multiple_choice.py`") and is not checked. A markdown link `[text](target)` that is not a URL
  names a file relative to its page, and its `#anchor`, if any, a heading of that page (GitHub's slugs).
- `runs/` paths used as inputs: every `runs/...` word of a page that a documented command or snippet does not
  itself write (tests/readme_test.py's output flags `--model_dir`, `--output`, `--output_dir`, `--output_md`,
  `--output_png`, but `--model_dir` of bert-tf-export and bert-tf-embed, which is read; in prose too) must be
  written by a documented command: a shell command of a page's code blocks (a `make` target's recipe
  included) or a Python snippet's `writes` (tests/docs/snippets_test.py). A path is written when it or a folder
  above it is an output (runs/sst2/bert_tf.json of --model_dir=runs/sst2), or when it is a folder above an output
  (runs/serving of runs/serving/sst2/1). `runs/` itself and `runs/<name>`-style placeholders are not paths.
"""

import glob
import os
import re
import subprocess

from tests import readme_test
from tests.docs import snippets_test

ROOT = readme_test.ROOT
REPOSITORY_PATH = re.compile(r"(?<![\w./~-])(?:bert_tf|tests|tools|docs|configs)/[\w./*:-]*")
RUNS_PATH = re.compile(r"(?<![\w./~-])runs/[\w./-]*")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
OUTPUT_FLAG = re.compile(r"--(model_dir|output|output_dir|output_md|output_png)=$")
READS_MODEL_DIR = ("bert-tf-embed ", "bert-tf-export ")


EXAMPLE = re.compile(r"e\.g\.,?\s*`?$")


def pages():
    """The pages checked: snippets_test's, with docs/ARCHITECTURE.md and docs/api.md."""
    extra = [os.path.join(readme_test.DOCS, name) for name in snippets_test.NOT_CHECKED]
    return snippets_test.doc_pages() + sorted(page for page in extra if os.path.isfile(page))


def _read(page):
    with open(page, encoding="utf-8") as f:
        return f.read()


def _exists(path):
    """A repository path (see the module docstring) names something."""
    path = path.split("::")[0].rstrip(".:")
    full = os.path.join(ROOT, path)
    if "*" in path:
        return bool(glob.glob(full))
    if os.path.exists(full):
        return True
    module, dot, _ = path.rpartition(".")
    return bool(dot) and "/" in module and os.path.isfile(os.path.join(ROOT, module + ".py"))


def _slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page):
    anchors, seen = set(), {}
    in_code = False
    for line in _read(page).splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match and not in_code:
            slug = _slug(match.group(1))
            anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return anchors


def missing_paths(page):
    """`page:line: path` of the repository paths and links of a page that point at nothing."""
    missing = []
    name = os.path.relpath(page, ROOT)
    for number, line in enumerate(_read(page).splitlines(), 1):
        for match in REPOSITORY_PATH.finditer(line):
            if not _exists(match.group(0)) and not EXAMPLE.search(line[: match.start()]):
                missing.append(f"{name}:{number}: {match.group(0)}")
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            if not os.path.exists(path):
                missing.append(f"{name}:{number}: link {target}")
            elif anchor and path.endswith(".md") and anchor not in _anchors(path):
                missing.append(f"{name}:{number}: link {target}: no such heading in {os.path.relpath(path, ROOT)}")
    return list(dict.fromkeys(missing))


def test_repository_paths_and_links_exist():
    missing = [problem for page in pages() for problem in missing_paths(page)]
    assert not missing, "documentation paths that point at nothing:\n" + "\n".join(missing)


def _clean(path):
    return path.rstrip(".,:;/")


def _command_outputs(command):
    """The runs/ paths a shell command writes (its output flags)."""
    reads_model_dir = command.startswith(READS_MODEL_DIR)
    outputs = []
    for word in readme_test._shell_words(command):
        match = re.match(r"--(model_dir|output|output_dir|output_md|output_png)=(runs/.*)", word)
        if match and not (reads_model_dir and match.group(1) == "model_dir"):
            outputs.append(_clean(match.group(2)))
    return outputs


def written_paths():
    """Every runs/ path a documented command or snippet writes."""
    written = set(snippets_test.snippet_writes())
    for page in snippets_test.doc_pages():  # ARCHITECTURE.md's blocks are diagrams and listings, not commands
        for block in readme_test.page_blocks(page):
            for command in block:
                if command.startswith("make "):
                    recipe = subprocess.run(
                        ["make", "-s", "-n", "-o", ".venv/.installed", command.split()[1]],
                        cwd=ROOT,
                        capture_output=True,
                        text=True,
                    ).stdout.splitlines()
                else:
                    recipe = [command]
                for line in recipe:
                    written.update(_command_outputs(line))
    return written


def _is_written(path, written):
    return any(path == w or path.startswith(w + "/") or w.startswith(path + "/") for w in written)


def _prose_lines(page):
    """`(number, line)` of a page's lines outside its shell code blocks (prose, tables, Python snippets)."""
    language = None
    for number, line in enumerate(_read(page).splitlines(), 1):
        fence = re.match(r"^\s*```(\S*)\s*$", line)
        if fence and language is None:
            language = fence.group(1)
        elif fence and not fence.group(1):
            language = None
        elif language is None or language not in readme_test.SHELL_LANGUAGES:
            yield number, line


def _inputs(page):
    """`(where, path)` of the runs/ paths a page reads: its shell commands' words that are not outputs, and the
    other mentions of its prose and snippets but those after an output flag (`--output_dir=runs/...`)."""
    name = os.path.relpath(page, ROOT)
    for block in readme_test.page_blocks(page) if page in snippets_test.doc_pages() else []:
        for command in block:
            outputs = set(_command_outputs(command))
            for word in readme_test._shell_words(command):
                value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
                for match in RUNS_PATH.finditer(value):
                    if _clean(match.group(0)) not in outputs:
                        yield f"{name}: {command[:80]}", _clean(match.group(0))
    for number, line in _prose_lines(page):
        for match in RUNS_PATH.finditer(line):
            prefix = line[: match.start()]
            flag = OUTPUT_FLAG.search(prefix)
            commands = re.findall(r"bert-tf-\w+", prefix)
            reads = flag and flag.group(1) == "model_dir" and commands and commands[-1] + " " in READS_MODEL_DIR
            if not flag or reads:
                yield f"{name}:{number}", _clean(match.group(0))


def test_runs_inputs_are_written_by_a_documented_command():
    written = written_paths()
    unwritten = sorted(
        {
            f"{where}: {path}"
            for page in pages()
            for where, path in _inputs(page)
            if path != "runs" and not _is_written(path, written)
        }
    )
    assert not unwritten, (
        "runs/ paths the documentation reads that no documented command or snippet writes (a snippet's writes are "
        "listed in tests/docs/snippets_test.py):\n" + "\n".join(unwritten)
    )


def test_the_checks_find_what_the_pages_said_wrong(tmp_path):
    """Two mistakes the pages had: a test file that never existed, and a model directory no command wrote. The
    checks find each, and pass the page once a command writes the directory."""
    page = tmp_path / "page.md"
    text = (
        "Long texts: `tests/training/long_text_sst2_test.py`; [fine-tuning](#fine-tuning).\n\n"
        "## Fine-tuning\n\n"
        '```python\nexport_saved_model("runs/conll", "runs/serving/ner/1")\n```\n'
    )
    page.write_text(text, encoding="utf-8")
    assert [p.split(": ", 1)[1] for p in missing_paths(str(page))] == ["tests/training/long_text_sst2_test.py"]
    written = {"runs/serving/ner/1"}
    assert [path for _, path in _inputs(str(page)) if not _is_written(path, written)] == ["runs/conll"]
    command = "```sh\nbert-tf-finetune --task=ner --init=$M --model_dir=runs/conll\n```\n"
    page.write_text(
        text.replace("`tests/training/long_text_sst2_test.py`", "`tests/training/long_text_finetune_test.py`")
        + command,
        encoding="utf-8",
    )
    assert not missing_paths(str(page))
    written |= {path for block in readme_test.page_blocks(str(page)) for c in block for path in _command_outputs(c)}
    assert [path for _, path in _inputs(str(page)) if not _is_written(path, written)] == []
