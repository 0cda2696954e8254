"""bert_tf.tasks.squad helpers (the task runs end to end in tests/apps/finetune_test.py)."""

from bert_tf.data.squad import SquadExample
from bert_tf.tasks.squad import split_by_article


def test_split_by_article_holds_out_every_nth_title_in_file_order():
    examples = [
        SquadExample(id=f"{t}{i}", question="q", context="c", answers=[], title=t)
        for t in "abcdefghij"
        for i in range(2)
    ]
    train, held = split_by_article(examples, 5)
    assert sorted({e.title for e in held}) == ["e", "j"]  # the 5th and 10th article: 80/20
    assert len(train) == 16 and not {e.title for e in train} & {"e", "j"}
