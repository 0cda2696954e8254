"""Passages of a corpus to embed or search: a text file (one passage per line) or a TSV/CSV/JSONL file.

    from bert_tf.data import read_passages
    passages = read_passages("corpus.txt")  # ids "0", "1", ...: 0-based line numbers
    passages = read_passages("corpus.jsonl", text_column="text", id_column="doc_id")

Reading is Python: errors name the file and line.
"""

import dataclasses
import os

import tensorflow as tf

from bert_tf.data.classification import FORMATS, infer_format, read_rows

TEXT_EXTENSIONS = (".txt", ".text", "")
PASSAGE_FORMATS = ("text",) + FORMATS  # `file_format` choices of read_passages


@dataclasses.dataclass
class Passages:
    """Passage ids and texts in file order, and the 1-based line each came from.

    `ids` are strings: the id column's values, or a text file's 0-based line
    numbers ("0", "1", ...; blank lines are skipped but keep their numbers).
    """

    ids: list
    texts: list
    lines: list
    path: str

    def __len__(self):
        return len(self.texts)


def read_passages(path, text_column=None, id_column=None, file_format=None, has_header=None):
    """Reads the passages of `path`.

    Args:
        path: a text file (`.txt`, `.text` or no extension: one passage per
            line, UTF-8, invalid bytes replaced by U+FFFD) or a TSV/CSV/JSONL
            file (see `bert_tf.data.read_examples` for their rules).
        text_column: the TSV/CSV/JSONL column holding the passage (a header
            name / JSON key, or a 0-based index for a header-less TSV/CSV);
            required for those formats, refused for a text file.
        id_column: the column holding each passage's id; None: the 0-based
            index of the passage among the file's records, as a string.
        file_format: "text", "tsv", "csv" or "jsonl"; None infers it from the
            extension.
        has_header: TSV/CSV only, as in `read_examples`.

    Returns:
        `Passages`.

    Raises:
        FileNotFoundError: no such file.
        ValueError naming the file (and line): an empty corpus, a record with
            an empty text or id, a repeated id, a missing column, a text
            column given for a text file (or missing for a table).
    """
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"No such corpus file: {path}")
    if file_format is None:
        extension = os.path.splitext(path)[1].lower()
        if extension in TEXT_EXTENSIONS:
            file_format = "text"
        else:
            try:
                file_format = infer_format(path)
            except ValueError:
                raise ValueError(
                    f"Cannot infer the corpus format of {path!r} from its extension {extension!r}; pass the format "
                    f"(one of {PASSAGE_FORMATS}: .txt/.text or no extension is text, one passage per line)."
                ) from None
    if file_format not in ("text",) + FORMATS:
        raise ValueError(f"`file_format` must be one of {('text',) + FORMATS}. Received: file_format={file_format!r}")
    ids, texts, lines = [], [], []
    if file_format == "text":
        if text_column is not None or id_column is not None:
            raise ValueError(
                f"{path}: a text file holds one passage per line (ids: 0-based line numbers); text_column and "
                f"id_column are for TSV/CSV/JSONL files. Received: text_column={text_column!r}, "
                f"id_column={id_column!r}"
            )
        with tf.io.gfile.GFile(path, "rb") as f:
            content = f.read().decode("utf-8-sig", errors="replace")
        for index, text in enumerate(content.split("\n")):
            text = text.rstrip("\r")
            if text.strip():
                ids.append(str(index))
                texts.append(text)
                lines.append(index + 1)
    else:
        if text_column is None:
            raise ValueError(f"{path}: a {file_format.upper()} corpus needs text_column (the passage's column).")
        for line, row in read_rows(path, {"text": text_column, "id": id_column}, file_format, has_header):
            if not row["text"].strip():
                raise ValueError(f"{path}:{line}: the passage (column {text_column!r}) is empty.")
            identifier = row["id"].strip() if id_column is not None else str(len(texts))
            if not identifier:
                raise ValueError(f"{path}:{line}: the id (column {id_column!r}) is empty.")
            ids.append(identifier)
            texts.append(row["text"])
            lines.append(line)
    if not texts:
        raise ValueError(f"{path}: no passage in the file (empty, or only blank lines).")
    if id_column is not None and len(set(ids)) != len(ids):
        seen = {}
        for identifier, line in zip(ids, lines):
            if identifier in seen:
                raise ValueError(
                    f"{path}:{line}: id {identifier!r} was already used on line {seen[identifier]}; ids must be unique."
                )
            seen[identifier] = line
    return Passages(ids=ids, texts=texts, lines=lines, path=path)
