"""bert-tf-finetune end to end on tiny models and files: each task trains, scores, keeps its best model."""

import json
import os
import re
import subprocess

import keras
import pytest

from bert_tf.checkpoints import load_encoder, load_tokenizer
from bert_tf.checkpoints.settings import read_settings
from bert_tf.training.distribute import create_strategy
from bert_tf.training.finetuning import FinetuneConfig, finetune
from tests.helpers import conll_file, sentiment_tsv, squad_file, tiny_model_dir, write_text
from tests.launcher import python_command
from tests.tfds_mock import mock_tfds

WORDS = (
    "good great fine bad awful poor movie film plot actor john smith paris london went to the a was is "
    "who where what did see in it , . ? !"
).split()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return tiny_model_dir(tmp_path_factory.mktemp("tiny_bert"), WORDS, max_position_embeddings=64)


def _run(strategy="one_device", **overrides):
    """Fine-tunes with the library (the app's flags are FinetuneConfig's fields); returns the best metrics.

    The app itself runs in subprocesses below, as a user runs it: its flag
    defaults are its own there (apps imported into one process share flag
    names, and the last one imported sets the shared defaults).
    """
    values = dict(max_seq_length=32, global_batch_size=8, learning_rate=1e-2, steps_per_loop=5, warmup_proportion=0.0)
    values.update(overrides)
    keras.utils.set_random_seed(values.get("seed", 0))
    return finetune(FinetuneConfig(**values), strategy=create_strategy(strategy), log=lambda message: None)


def finetune_app(*argv):
    """bert-tf-finetune with `argv` in a fresh process on the CPU; returns the finished process (output as text)."""
    return subprocess.run(
        python_command("-m", "bert_tf.apps.finetune", *argv),
        capture_output=True,
        text=True,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
        timeout=300,
    )


def _sst2_run(init, tmp_path, out, **values):
    """Fine-tunes `init` into `out` on a sentiment TSV as SST-2 with `values`, evaluating on 24 more rows; returns
    eval_results.json."""
    train = sentiment_tsv(tmp_path / "train.tsv", seed=0)
    dev = sentiment_tsv(tmp_path / "dev.tsv", n=24, seed=1)
    _run(
        task="classification",
        init=init,
        train_file=train,
        eval_file=dev,
        glue_task="sst2",
        model_dir=str(out),
        **values,
    )
    return json.loads((out / "eval_results.json").read_text())


def test_classification_learns_and_keeps_the_best_model(tiny_dir, tmp_path):
    out = tmp_path / "run"
    results = _sst2_run(tiny_dir, tmp_path, out, epochs=12.0)
    assert {"accuracy", "f1", "mcc", "precision", "recall", "step"} <= set(results)
    assert results["accuracy"] == 1.0  # the sentiment word decides the label
    rows = (out / "predictions.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:2] == ["index", "prediction"] and len(rows) == 25
    assert read_settings(str(out))["labels"] == ["negative", "positive"]  # --glue_task=sst2 names the file's 0/1
    assert {row.split("\t")[1] for row in rows[1:]} <= {"negative", "positive"}
    assert rows[0].split("\t")[2:] == ["p(negative)", "p(positive)"]
    assert load_encoder(str(out)).count_params() > 0


@pytest.fixture(scope="module")
def split_init(tmp_path_factory):
    """A tiny model directory whose bert_tf.json says `split_special_tokens: true` (not the default)."""
    directory = tmp_path_factory.mktemp("split_init")
    return tiny_model_dir(directory, WORDS, max_position_embeddings=64, split_special_tokens=True)


def _short_run(init, model_dir, **overrides):
    train = sentiment_tsv(os.path.join(os.path.dirname(model_dir), "train.tsv"), n=8)
    _run(
        task="classification",
        init=init,
        train_file=train,
        glue_task="sst2",
        train_steps=1,
        model_dir=model_dir,
        **overrides,
    )
    return read_settings(model_dir)


@pytest.mark.slow
def test_split_special_tokens_is_the_init_directorys(split_init, tmp_path):
    """bert_tf.json's `split_special_tokens` goes from --init to the fine-tuned directory (and so to its export)."""
    settings = _short_run(split_init, str(tmp_path / "run"))
    assert settings["split_special_tokens"] is True
    assert load_tokenizer(str(tmp_path / "run"), settings).split_special_tokens
    with pytest.raises(ValueError, match="split_special_tokens='yes'"):
        _short_run(split_init, str(tmp_path / "bad"), split_special_tokens="yes")
    assert not os.path.exists(tmp_path / "bad")


def test_split_special_tokens_flag_overrides_the_init_directory(split_init, tmp_path):
    assert _short_run(split_init, str(tmp_path / "run"), split_special_tokens=False)["split_special_tokens"] is False


@pytest.mark.slow
def test_regression_reports_pearson_and_spearman(tiny_dir, tmp_path):
    score = {"good": 4.5, "fine": 2.5, "bad": 0.5}  # the first segment's word decides
    rows = [f"the {w} film\tit was {v}\t{score[w]}" for w in score for v in score]
    # 180 training rows: 22 steps an epoch, so the 60 steps evaluate 3 times (27 rows: 3 steps an epoch, 20 times).
    train = write_text(tmp_path / "train.tsv", "\n".join(["a\tb\tscore"] + rows * 20) + "\n")
    dev = write_text(tmp_path / "dev.tsv", "\n".join(["a\tb\tscore"] + rows * 3) + "\n")
    out = tmp_path / "run"
    _run(
        task="regression",
        init=tiny_dir,
        train_file=train,
        eval_file=dev,
        text_column="a",
        text_pair_column="b",
        label_column="score",
        train_steps=60,
        model_dir=str(out),
    )
    results = json.loads((out / "eval_results.json").read_text())
    assert {"pearson", "spearman"} <= set(results) and results["pearson"] > 0.5


@pytest.mark.slow
def test_ner_scores_entities_and_writes_conlleval_predictions(tiny_dir, tmp_path):
    train = conll_file(tmp_path / "train.txt")
    dev = conll_file(tmp_path / "dev.txt", n=10, seed=1)
    out = tmp_path / "run"
    _run(task="ner", init=tiny_dir, train_file=train, eval_file=dev, epochs=15.0, model_dir=str(out))
    results = json.loads((out / "eval_results.json").read_text())
    assert {"precision", "recall", "f1", "accuracy"} <= set(results)
    assert results["f1"] == 1.0
    lines = (out / "predictions.conll").read_text().splitlines()
    assert lines[0].split()[0] in ("john", "the") and len(lines[0].split()) == 3
    assert read_settings(str(out))["labels"][0] == "O"


def test_squad_holds_out_articles_and_scores_answers(tiny_dir, tmp_path):
    train = squad_file(tmp_path / "train.json")
    out = tmp_path / "run"
    _run(
        task="squad",
        init=tiny_dir,
        train_file=train,
        eval_every_nth_article=4,
        doc_stride=8,
        max_query_length=8,
        epochs=10.0,
        model_dir=str(out),
    )
    results = json.loads((out / "eval_results.json").read_text())
    assert {"exact_match", "f1"} <= set(results)
    answers = json.loads((out / "predictions.json").read_text())
    assert sorted(answers) == sorted(f"q{i}{k}" for i in (3, 7, 11) for k in "ws")  # articles 4, 8, 12 held out
    contexts = {
        p["qas"][0]["id"][:-1]: p["context"] for a in json.loads(open(train).read())["data"] for p in a["paragraphs"]
    }
    assert all(text in contexts[qid[:-1]] for qid, text in answers.items())


def test_unknown_eval_label_names_file_and_line(tiny_dir, tmp_path):
    """Through the app: the error is printed with file and line and the exit status is 1."""
    train = sentiment_tsv(tmp_path / "train.tsv")
    dev = write_text(tmp_path / "dev.tsv", "sentence\tlabel\nthe film was good .\t1\nthe film was bad .\t7\n")
    result = finetune_app(
        "--task=classification",
        f"--init={tiny_dir}",
        f"--train_file={train}",
        f"--eval_file={dev}",
        "--glue_task=sst2",
        "--train_steps=1",
        "--max_seq_length=32",
        f"--model_dir={tmp_path / 'run'}",
    )
    assert result.returncode == 1
    assert f"{dev}:3: unknown label '7'" in result.stderr


def test_malformed_tsv_row_names_file_and_line(tiny_dir, tmp_path):
    train = write_text(tmp_path / "train.tsv", "sentence\tlabel\ngood film\t1\nbad film\t0\textra\n")
    with pytest.raises(ValueError, match=re.escape(f"{train}:3")):
        _run(
            task="classification",
            init=tiny_dir,
            train_file=train,
            text_column="sentence",
            label_column="label",
            train_steps=1,
            model_dir=str(tmp_path / "run"),
        )


def test_conll_line_with_wrong_column_count_names_file_and_line(tiny_dir, tmp_path):
    train = write_text(tmp_path / "train.txt", "john NNP B-NP B-PER\nsmith NNP I-PER\n\n")
    with pytest.raises(ValueError, match=re.escape(f"{train}:2")):
        _run(task="ner", init=tiny_dir, train_file=train, train_steps=1, model_dir=str(tmp_path / "run"))


def test_squad_answer_not_at_its_offset_names_the_question(tiny_dir, tmp_path):
    data = {
        "version": "1.1",
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "john went to paris .",
                        "qas": [
                            {"id": "bad1", "question": "where ?", "answers": [{"text": "paris", "answer_start": 2}]}
                        ],
                    }
                ],
            }
        ],
    }
    train = write_text(tmp_path / "train.json", json.dumps(data))
    with pytest.raises(ValueError, match="bad1"):
        _run(
            task="squad",
            init=tiny_dir,
            train_file=train,
            train_steps=1,
            max_query_length=8,
            doc_stride=8,
            model_dir=str(tmp_path / "run"),
        )


def test_missing_required_flag_is_a_usage_error(tmp_path):
    result = finetune_app("--task=ner", f"--train_file={tmp_path}", f"--model_dir={tmp_path / 'run'}")
    assert result.returncode != 0 and "--init is required" in result.stderr
    assert not (tmp_path / "run").exists()


def test_helpfull_documents_canonical_flags():
    import subprocess

    out = subprocess.run(
        python_command("-m", "bert_tf.apps.finetune", "--helpfull"),
        capture_output=True,
        text=True,
        env=dict(os.environ, CUDA_VISIBLE_DEVICES=""),
        timeout=120,
    ).stdout
    for name in (
        "task",
        "init",
        "train_file",
        "eval_file",
        "text_column",
        "text_pair_column",
        "label_column",
        "max_seq_length",
        "doc_stride",
        "max_query_length",
        "epochs",
        "train_steps",
        "global_batch_size",
        "learning_rate",
        "warmup_proportion",
        "weight_decay",
        "dtype",
        "jit_compile",
        "strategy",
        "seed",
        "model_dir",
    ):
        assert f"--{name}" in out or f"--[no]{name}" in out


@pytest.mark.slow
def test_tfds_inputs_offline_under_mock_data(tiny_dir, tmp_path):

    rows = [
        {"idx": i, "sentence": f"the film was {w} .", "label": int(w in ("good", "great"))}
        for i, w in enumerate(["good", "bad", "great", "awful"] * 4)
    ]
    calls, mock = mock_tfds({"glue/sst2": {"train": rows, "validation": rows[:8]}})
    out = tmp_path / "run"
    with mock:
        assert _run(
            task="classification",
            init=tiny_dir,
            train_file="tfds:glue/sst2",
            eval_file="tfds:glue/sst2",
            text_column="sentence",
            train_steps=2,
            model_dir=str(out),
        )
    assert ("glue/sst2", "train") in calls and ("glue/sst2", "validation") in calls
    assert read_settings(str(out))["labels"] == ["negative", "positive"]  # the dataset's own label names
    assert len((out / "predictions.tsv").read_text().splitlines()) == 9


@pytest.mark.slow
def test_mirrored_strategy_gives_the_one_device_result(tiny_dir, tmp_path):
    """Two replicas (logical CPUs) and one device: the same steps give the same scores."""
    results = {}
    for strategy in ("one_device", "mirrored"):
        results[strategy] = _sst2_run(
            tiny_dir, tmp_path, tmp_path / strategy, train_steps=6, strategy=strategy, dropout=0.0
        )
    assert results["mirrored"]["accuracy"] == results["one_device"]["accuracy"]
    assert results["mirrored"]["mcc"] == pytest.approx(results["one_device"]["mcc"], abs=1e-6)
