"""The documentation's lists of encoder families are whole: every family of `bert_tf.config.MODEL_TYPES`.

The pages are README.md and docs/*.md (tests/docs/snippets_test.py's `doc_pages()`; not docs/results/, dated
records). What is checked, on each page's prose (paragraphs joined across lines, code blocks left out) and
tables:

1. A count of families ("six families", "Seven encoder families", "7 model families") is `len(MODEL_TYPES)`.
2. An enumeration of families by name (`DISPLAY_NAMES`: "BERT", "RoBERTa", ..., "DeBERTa-v2/v3", "ModernBERT")
   of `ENUMERATION` (`len(MODEL_TYPES) - 2`) names or more, separated only by commas, "and", "or" or "/" (a
   parenthesis after a name allowed), names every family.
3. An enumeration of `model_type` values in backquotes (`` `bert`, `roberta`, ... ``) of `ENUMERATION` values
   or more names every family.
4. A table whose header's first cell begins with "family" has a row for every family (its first cell names it:
   display name or `model_type`).

A shorter list ("a `BertEncoder` (BERT, RoBERTa, DistilBERT, ELECTRA)") is a statement about those families, not a
list of all of them, and is not checked; a list of all but one or two is taken for a list of all that lost some.
"""

import os
import re

from bert_tf.config import MODEL_TYPES
from tests.docs import snippets_test

DISPLAY_NAMES = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "distilbert": "DistilBERT",
    "electra": "ELECTRA",
    "albert": "ALBERT",
    "deberta-v2": "DeBERTa-v2",
    "modernbert": "ModernBERT",
    "xlm-roberta": "XLM-RoBERTa",
    "mpnet": "MPNet",
    "nomic_bert": "NomicBERT",
    "gte": "GTE",
}
ENUMERATION = len(MODEL_TYPES) - 2  # names in a row that make a list of the families (all but two)
COUNTS = {
    word: n for n, word in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())
}
_NAME = re.compile(
    r"(?<![\w-])(XLM-RoBERTa|MPNet|NomicBERT|GTE|DistilBERT|ModernBERT|RoBERTa|DeBERTa-v2(?:/v3)?|DeBERTa|ELECTRA|ALBERT"
    r"|BERT)(?![\w-])"
)
_MODEL_TYPE = re.compile(r"`([a-z0-9_-]+)`")
_COUNT = re.compile(r"\b(\w+)\s+(?:(?:encoder|model|architecture)\s+)?families\b", re.IGNORECASE)
# Between two names of a list: a comma, "and", "or" or "/", after a parenthesis on the former ("`bert` (the default),").
_SEPARATOR = re.compile(r"(?:\s*\([^()]*\))?\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+|/)\s*")


def _family_of(name):
    name = name.split("/")[0]
    for model_type, display in DISPLAY_NAMES.items():
        if name in (display, display.split("-")[0]):
            return model_type
    return None


def _pages():
    for page in snippets_test.doc_pages():
        with open(page, encoding="utf-8") as f:
            yield os.path.relpath(page, snippets_test.ROOT), f.read()


def _prose_and_tables(text):
    """`(paragraphs, tables)`: paragraphs as single lines, tables as lists of rows (lists of cells)."""
    paragraphs, tables, current, table, in_code = [], [], [], [], False
    for line in text.splitlines() + [""]:
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if line.lstrip().startswith("|"):
            table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            continue
        if table:
            tables.append(table)
            table = []
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return paragraphs, tables


def _runs(text, pattern, value):
    """Maximal runs of `pattern` matches separated only by `_SEPARATOR`: lists of `value(match)`."""
    runs, run, end = [], [], None
    for match in pattern.finditer(text):
        if run and _SEPARATOR.fullmatch(text[end : match.start()]):
            run.append(value(match))
        else:
            if run:
                runs.append(run)
            run = [value(match)]
        end = match.end()
    if run:
        runs.append(run)
    return runs


def test_display_names_cover_model_types():
    assert set(DISPLAY_NAMES) == set(MODEL_TYPES), "DISPLAY_NAMES must name each family of MODEL_TYPES"


def miscounts(text):
    """The counts of families in a page's prose that are not `len(MODEL_TYPES)` ("six families")."""
    wrong = []
    for paragraph in _prose_and_tables(text)[0]:
        for match in _COUNT.finditer(paragraph):
            word = match.group(1).lower()
            count = int(word) if word.isdigit() else COUNTS.get(word)
            if count is not None and count != len(MODEL_TYPES):
                wrong.append(f"{match.group(0)!r} (MODEL_TYPES has {len(MODEL_TYPES)})")
    return wrong


def incomplete_lists(text):
    """A page's lists of families (by name, by `model_type`, a family table) that miss a family."""
    incomplete = []
    paragraphs, tables = _prose_and_tables(text)
    rows = [" ".join(row) for table in tables for row in table]
    for paragraph in paragraphs + rows:
        for run in _runs(paragraph, _NAME, lambda m: _family_of(m.group(1))):
            if len(set(run)) >= ENUMERATION and set(run) != set(MODEL_TYPES):
                missing = [DISPLAY_NAMES[t] for t in MODEL_TYPES if t not in run]
                incomplete.append(f"a list of {len(set(run))} families lacks {missing}: {paragraph[:100]}")
        for run in _runs(paragraph, _MODEL_TYPE, lambda m: m.group(1)):
            types = set(run) & set(MODEL_TYPES)
            if len(types) >= ENUMERATION and types != set(MODEL_TYPES):
                missing = [t for t in MODEL_TYPES if t not in types]
                incomplete.append(f"a list of model_type values lacks {missing}: {paragraph[:100]}")
    for table in tables:
        if table[0] and table[0][0].lower().startswith("family"):
            named = {_family_of(m.group(1)) for row in table[2:] for m in _NAME.finditer(row[0])}
            named |= {m.group(1) for row in table[2:] for m in _MODEL_TYPE.finditer(row[0])}
            missing = [DISPLAY_NAMES[t] for t in MODEL_TYPES if t not in named]
            if missing:
                incomplete.append(f"the table '{' | '.join(table[0])[:60]}' has no row for {missing}")
    return incomplete


def test_no_page_miscounts_the_families():
    wrong = [f"{name}: {problem}" for name, text in _pages() for problem in miscounts(text)]
    assert not wrong, "\n".join(wrong)


def test_family_lists_name_every_family():
    incomplete = [f"{name}: {problem}" for name, text in _pages() for problem in incomplete_lists(text)]
    assert not incomplete, "family lists that miss a family of bert_tf.config.MODEL_TYPES:\n" + "\n".join(incomplete)


def _page(model_types):
    """A page's count, list of names, list of `model_type` values and family table, of `model_types`."""
    names = [DISPLAY_NAMES[t] for t in model_types]
    words = {n: word for word, n in COUNTS.items()}
    return (
        f"`--input` is a Hugging Face directory of any of the {words[len(names)]} families ({', '.join(names[:-1])} "
        f"and {names[-1]}) or a Google TF1 checkpoint.\n\n"
        f"`model_type` ({', '.join(f'`{t}`' for t in model_types)}: `MODEL_TYPES`)\n\n"
        "| family | loads |\n|---|---|\n" + "".join(f"| {name} | yes |\n" for name in names)
    )


def test_the_checks_find_a_page_that_lacks_the_last_family():
    """What a page said before the last family of MODEL_TYPES was counted: each check finds its case, and passes
    the fixed text."""
    old = _page(MODEL_TYPES[:-1])
    assert len(miscounts(old)) == 1 and len(incomplete_lists(old)) == 3
    new = _page(MODEL_TYPES)
    assert not miscounts(new) and not incomplete_lists(new)
    # A statement about some families is not a list of them.
    assert not incomplete_lists("A `BertEncoder` (BERT, RoBERTa, DistilBERT, ELECTRA) or ALBERT (shared) and DeBERTa.")
