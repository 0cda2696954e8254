"""read_passages: text files and tables, ids, and the errors that name file and line."""

import pytest

from bert_tf.data import read_passages
from tests.helpers import write_text


def test_text_file_ids_are_line_numbers(tmp_path):
    path = write_text(tmp_path / "corpus.txt", "first passage\n\n  \nfourth \xe9t\xe9\r\n")
    passages = read_passages(str(path))
    assert passages.ids == ["0", "3"]
    assert passages.texts == ["first passage", "fourth \xe9t\xe9"]
    assert passages.lines == [1, 4]
    assert len(passages) == 2


def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9 au lait\nplain\n")
    assert read_passages(str(path)).texts == ["caf\ufffd au lait", "plain"]


def test_tables_with_id_columns(tmp_path):
    tsv = write_text(tmp_path / "c.tsv", "id\ttext\na1\tThe cat.\nb2\tThe dog.\n")
    passages = read_passages(str(tsv), text_column="text", id_column="id")
    assert (passages.ids, passages.texts, passages.lines) == (["a1", "b2"], ["The cat.", "The dog."], [2, 3])
    jsonl = write_text(tmp_path / "c.jsonl", '{"body": "One."}\n\n{"body": "Two."}\n')
    passages = read_passages(str(jsonl), text_column="body")
    assert (passages.ids, passages.lines) == (["0", "1"], [1, 3])


@pytest.mark.parametrize(
    "name, content, kwargs, message",
    [
        ("empty.txt", "", {}, r"empty.txt: no passage in the file"),
        ("blank.txt", "\n \n", {}, r"blank.txt: no passage"),
        ("t.txt", "a\n", {"text_column": "text"}, r"t.txt: a text file holds one passage per line"),
        ("t.tsv", "text\na\n", {}, r"t.tsv: a TSV corpus needs text_column"),
        ("r.tsv", "id\ttext\nx\ta\ny\t \n", {"text_column": "text", "id_column": "id"}, r"r.tsv:3: the passage"),
        ("i.tsv", "id\ttext\n\ta\n", {"text_column": "text", "id_column": "id"}, r"i.tsv:2: the id"),
        ("d.tsv", "id\ttext\nx\ta\nx\tb\n", {"text_column": "text", "id_column": "id"}, r"d.tsv:3: id 'x'.*line 2"),
        ("m.jsonl", '{"t": "a"}\n', {"text_column": "text"}, r"m.jsonl:1: missing column 'text'"),
    ],
)
def test_bad_corpora_name_file_and_line(tmp_path, name, content, kwargs, message):
    path = write_text(tmp_path / name, content)
    with pytest.raises(ValueError, match=message):
        read_passages(str(path), **kwargs)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such corpus file"):
        read_passages(str(tmp_path / "absent.txt"))
