"""bert_tf.tasks.classification helpers (the task runs end to end in tests/apps/finetune_test.py)."""

import dataclasses
import os
import subprocess

import pytest

from bert_tf.tasks.classification import check_config, parse_column
from bert_tf.training import FinetuneConfig, finetune
from tests.launcher import python_command


def test_parse_column():
    assert parse_column("3") == 3 and parse_column("-1") == -1 and parse_column("sentence") == "sentence"
    assert parse_column(None) is None and parse_column("") is None


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_sentence_tasks_need_their_columns_before_anything_is_read(task, tmp_path):
    run = tmp_path / "run"
    config = FinetuneConfig(task=task, init="/nonexistent", train_file="/nonexistent", model_dir=str(run))
    with pytest.raises(ValueError, match=r"needs `text_column` \(and `label_column`\) or `glue_task`"):
        finetune(config, log=lambda message: None)
    config = dataclasses.replace(config, text_column="sentence")
    with pytest.raises(ValueError, match=r"needs `label_column` for training.*Received: label_column=None"):
        finetune(config, log=lambda message: None)
    assert not run.exists()
    for ok in (dataclasses.replace(config, label_column="label"), dataclasses.replace(config, glue_task="sst2")):
        check_config(ok)


def test_the_app_reports_a_missing_column_as_a_usage_error(tmp_path):
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.finetune", "--task=classification", f"--init={tmp_path}",
         f"--train_file={tmp_path}", f"--model_dir={tmp_path / 'run'}", "--text_column=sentence"),
        capture_output=True, text=True, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""), timeout=120,
    )  # fmt: skip
    assert result.returncode != 0 and "needs `label_column` for training" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_glue_task_names_the_labels_of_files_and_tfds(tmp_path):
    """--glue_task=sst2: the files' 0/1 and TFDS's ClassLabel are the same ids with the same names."""
    from bert_tf.tasks.classification import SentenceData
    from tests.tfds_mock import mock_tfds

    train = tmp_path / "train.tsv"
    train.write_text("sentence\tlabel\ngood\t1\nbad\t0\n")
    config = FinetuneConfig(task="classification", init="-", glue_task="sst2", train_file=str(train), model_dir="-")
    data = SentenceData(config, tokenizer=None, max_position_embeddings=None)
    assert data.label_names == ["negative", "positive"] and data.train.labels == [1, 0]
    # --label_names replaces the task's names: then they are the file's values.
    data = SentenceData(dataclasses.replace(config, label_names=["1", "0"]), None, None)
    assert data.label_names == ["1", "0"] and data.train.labels == [0, 1]

    rows = [{"idx": 0, "sentence": "good", "label": 1}, {"idx": 1, "sentence": "bad", "label": 0}]
    _, mock = mock_tfds({"glue/sst2": rows})
    with mock:
        data = SentenceData(dataclasses.replace(config, train_file="tfds:glue/sst2"), None, None)
    assert data.label_names == ["negative", "positive"] and data.train.labels == [1, 0]
