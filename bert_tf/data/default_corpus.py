"""A default pretraining corpus available offline on any machine: Python's own documentation.

The docstrings of a fixed list of standard-library modules (and their public
classes and functions), one document per line, in the "paragraphs" format of
`bert_tf.data.pretraining`. About 0.3 MB of English technical prose; the exact
text follows the Python version.
"""

import importlib
import inspect
import os
import re

MODULES = (
    "abc argparse array ast asyncio base64 bisect builtins bz2 calendar cmath cmd codecs collections "
    "colorsys concurrent.futures configparser contextlib copy csv dataclasses datetime decimal difflib dis "
    "doctest email enum filecmp fnmatch fractions functools gc getopt gettext glob gzip hashlib heapq hmac html "
    "html.parser http.client importlib inspect io ipaddress itertools json keyword locale logging lzma mailbox "
    "math mimetypes mmap multiprocessing numbers operator optparse os pathlib pdb pickle pkgutil platform pprint "
    "queue random re reprlib sched secrets select selectors shlex shutil signal socket sqlite3 ssl stat "
    "statistics string struct subprocess symtable sysconfig tarfile tempfile textwrap threading time timeit "
    "tokenize trace traceback tracemalloc types typing unicodedata unittest urllib.request uuid warnings wave "
    "weakref xml.etree.ElementTree zipfile zipimport"
).split()
MIN_CHARACTERS = 200  # shorter docstrings are mostly signatures


def default_documents():
    """Docstrings as single-line documents, in a fixed order."""
    documents, seen = [], set()
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # a module missing from a trimmed Python build
            continue
        objects = [module]
        for _, obj in sorted(vars(module).items()):
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", None) == name:
                objects.append(obj)
                if inspect.isclass(obj):  # and its methods
                    objects += [m for _, m in sorted(vars(obj).items()) if inspect.isfunction(m)]
        for obj in objects:
            doc = inspect.getdoc(obj)
            if not doc or len(doc) < MIN_CHARACTERS or id(doc) in seen:
                continue
            seen.add(id(doc))
            documents.append(re.sub(r"\s+", " ", doc).strip())
    return documents


def write_default_corpus(path):
    """Writes the default corpus to `path` (whole or not at all: beside it, then renamed, so other workers never
    read a part of it); returns the number of documents."""
    documents = default_documents()
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write("\n".join(documents) + "\n")
    os.replace(temporary, path)
    return len(documents)
