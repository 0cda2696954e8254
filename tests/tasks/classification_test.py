"""bert_tf.tasks.classification helpers (the task runs end to end in tests/apps/finetune_test.py)."""

from bert_tf.tasks.classification import parse_column


def test_parse_column():
    assert parse_column("3") == 3 and parse_column("-1") == -1 and parse_column("sentence") == "sentence"
    assert parse_column(None) is None and parse_column("") is None
