"""The "embedding" task: fine-tuning on pairs, scored pairs and SQuAD files, export, loading, exact resume."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import read_settings
from bert_tf.data import ClassificationExamples, classification
from bert_tf.embeddings import SentenceEmbedder
from bert_tf.export import EmbeddingModule, export_saved_model, load_task_model, serving_module
from bert_tf.export.saved_model import kind_of
from bert_tf.models import BertSentenceEncoder
from bert_tf.tasks.embedding import EmbeddingData, rank_passages
from bert_tf.training import FinetuneConfig, create_strategy, finetune
from bert_tf.training.distribute import mirrored_strategy
from tests.apps.finetune_test import finetune_app
from tests.conftest import DATA_DIR
from tests.helpers import tiny_model_dir

ANIMALS = {"cat": "purrs", "dog": "barks", "bird": "sings", "fish": "swims"}
COLOURS = ("red", "blue", "green")
WORDS = [*ANIMALS, *ANIMALS.values(), *COLOURS, "the", "a", "small", "big", "which", "?", "."]
QUIET = dict(log=lambda message: None)


def _rows(rng, n):
    """(anchor, positive, negative, score) rows: "the red cat" goes with "a cat purrs", not with another animal."""
    rows = []
    for _ in range(n):
        animal, other = rng.choice(list(ANIMALS), size=2, replace=False)
        anchor = f"the {rng.choice(COLOURS)} {animal}"
        positive = f"a {rng.choice(['small', 'big'])} {animal} {ANIMALS[animal]}"
        rows.append((anchor, positive, f"a {other} {ANIMALS[other]}", 1.0 if rng.random() < 0.5 else 0.0))
    return rows


def _write_tsv(path, rows, scored=False):
    header = "anchor\tpositive\tnegative\tscore\n"
    lines = []
    for anchor, positive, negative, score in rows:
        second = positive if not scored or score else negative
        lines.append(f"{anchor}\t{second}\t{negative}\t{score}\n")
    path.write_text(header + "".join(lines), encoding="utf-8")
    return str(path)


def _build_tiny_dir(directory):
    # --init's pooling and normalization (here not the defaults) are what the fine-tuned model keeps.
    return tiny_model_dir(directory, WORDS, max_position_embeddings=32, pooling=["cls", "mean"], normalize=False)


@pytest.fixture(scope="module")
def tiny_dir(shared_artifact):
    return shared_artifact("embedding_task_tiny_dir", _build_tiny_dir)[1]  # once per test run, read only


def _build_pair_files(directory):
    rng = np.random.default_rng(0)
    return [_write_tsv(directory / "train.tsv", _rows(rng, 32)), _write_tsv(directory / "dev.tsv", _rows(rng, 12))]


@pytest.fixture(scope="module")
def pair_files(shared_artifact):
    return tuple(shared_artifact("embedding_task_pair_files", _build_pair_files)[1])  # once per test run, read only


def _config(tiny_dir, model_dir, train_file, **overrides):
    fields = dict(
        task="embedding",
        init=tiny_dir,
        train_file=train_file,
        model_dir=str(model_dir),
        text_column="anchor",
        text_pair_column="positive",
        max_seq_length=16,
        global_batch_size=8,
        learning_rate=1e-3,
        warmup_proportion=0.0,
        epochs=2.0,
        steps_per_loop=2,
        eval_batch_size=5,
    )
    return FinetuneConfig(**{**fields, **overrides})


def _embed(model, tokenizer, texts):
    return SentenceEmbedder.from_model(model, tokenizer, 16, batch_size=4).encode(texts)


EXTRA_PASSAGES = ["a bird flies", "a cat purrs", "the red mat"]  # a passage file's: one is also a positive


def _build_pair_run(directory, tiny_dir, pair_files):
    run = directory / "run"
    corpus = directory / "passages.txt"
    corpus.write_text("\n".join(EXTRA_PASSAGES) + "\n", encoding="utf-8")
    keras.utils.set_random_seed(0)
    config = _config(
        tiny_dir, run, pair_files[0], eval_file=pair_files[1], negative_column="negative", eval_corpus=str(corpus)
    )
    best = finetune(config, strategy=create_strategy("one_device"), **QUIET)
    return [str(run), best]


@pytest.fixture(scope="module")
def pair_run(tiny_dir, pair_files, shared_artifact):
    """One triplet run, once per test run (read only): `(model directory, best evaluation)`."""
    _, (run, best) = shared_artifact(
        "embedding_task_pair_run", lambda directory: _build_pair_run(directory, tiny_dir, pair_files)
    )
    return run, best


@pytest.mark.slow
def test_triplets_train_with_retrieval_evaluation_and_the_model_directory_keeps_the_pooling(pair_run, pair_files):
    run, best = pair_run
    assert set(best) == {"recall@1", "recall@5", "recall@10", "mrr@10", "step", "epoch"}
    assert 0.0 < best["mrr@10"] <= 1.0 and best["recall@1"] <= best["recall@5"] <= best["recall@10"] == 1.0
    assert json.loads(open(os.path.join(run, "eval_results.json")).read())["mrr@10"] == best["mrr@10"]
    settings = read_settings(run)
    assert settings["task"] == "embedding" and settings["labels"] is None and settings["max_seq_length"] == 16
    assert settings["pooling"] == ["cls", "mean"] and settings["normalize"] is False  # --init's
    # Predictions: per query its relevant passage and the ranked passages (indices into the distinct passages).
    lines = open(os.path.join(run, "predictions.tsv")).read().splitlines()
    assert lines[0] == "index\trelevant\tranked" and len(lines) == 13

    # The directory's model: a BertSentenceEncoder with the recorded pooling; its checkpoint is the encoder's.
    model, loaded_settings = load_task_model(run)
    assert isinstance(model, BertSentenceEncoder) and model.pooling == ("cls", "mean") and not model.normalize
    assert loaded_settings["task"] == "embedding"
    same, _ = tasks.load_model(run)
    assert isinstance(same, BertSentenceEncoder) and same.pooling == ("cls", "mean")
    reader = tf.train.load_checkpoint(os.path.join(run, "bert_model.ckpt"))
    assert all(name.startswith("bert/") for name in reader.get_variable_to_shape_map())
    # The evaluation ranks as the saved model does.
    tokenizer = checkpoints.load_tokenizer(run, settings)
    dev = [line.split("\t") for line in open(pair_files[1]).read().splitlines()[1:]]
    corpus = list(dict.fromkeys([row[1] for row in dev] + [row[2] for row in dev] + EXTRA_PASSAGES))
    assert len(corpus) > len(set(row[1] for row in dev) | set(row[2] for row in dev))
    top = rank_passages(_embed(model, tokenizer, [row[0] for row in dev]), _embed(model, tokenizer, corpus), 10)
    expected = [
        f"{i}\t{corpus.index(row[1])}\t{','.join(map(str, ranked))}" for i, (row, ranked) in enumerate(zip(dev, top))
    ]
    assert lines[1:] == expected


def test_the_model_embeds_k_texts_per_example_in_one_call(pair_run):
    model, settings = load_task_model(pair_run[0])
    tokenizer = checkpoints.load_tokenizer(pair_run[0], settings)
    texts = ["the red cat", "a small cat purrs", "a dog barks", "the blue fish", "a fish swims", "a big bird sings"]
    features = next(iter(classification.make_dataset(ClassificationExamples(texts=texts), tokenizer, 16, 6)))
    separate = model(features).numpy()  # [6, D]
    flat = {k: tf.reshape(v, [2, 3, -1]) for k, v in features.items()}  # [B=2, K=3, T]
    together = model(flat).numpy()
    assert together.shape == (2, 3, separate.shape[-1])
    np.testing.assert_allclose(together.reshape(6, -1), separate, atol=1e-5)


@pytest.mark.slow
def test_export_serves_the_models_embedding(pair_run, tmp_path):
    run = pair_run[0]
    module = serving_module(run)
    assert isinstance(module, EmbeddingModule) and kind_of(module) == "embedding"
    output = tmp_path / "serving" / "1"
    metadata = export_saved_model(run, str(output))
    assert metadata["kind"] == "embedding"
    texts = ["the red cat", "a dog barks", "", "which bird sings ?"]
    served = tf.saved_model.load(str(output)).signatures["serving_default"](text=tf.constant(texts))
    model, settings = load_task_model(run)
    expected = _embed(model, checkpoints.load_tokenizer(run, settings), texts)
    np.testing.assert_allclose(served["sentence_embedding"].numpy(), expected, atol=1e-5)
    assert not np.allclose(np.linalg.norm(expected, axis=-1), 1.0)  # normalize=false, as recorded
    # The trained model searches a corpus with no --encoder_only: the search ranks by its own embedding.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the red cat\na dog barks\nwhich bird sings ?\n")
    export_saved_model(run, str(tmp_path / "search"), search_corpus=str(corpus))
    found = tf.saved_model.load(str(tmp_path / "search")).signatures["search"](query=tf.constant(texts[:2]), k=3)
    scores = expected[:2] @ np.delete(expected, 2, axis=0).T  # passages: texts 0, 1, 3
    np.testing.assert_allclose(found["scores"].numpy(), -np.sort(-scores, axis=-1), atol=1e-5)


def test_scored_pairs_train_with_the_cosine_loss_and_keep_the_best_spearman(tiny_dir, tmp_path):
    rng = np.random.default_rng(1)
    train = _write_tsv(tmp_path / "train.tsv", _rows(rng, 32), scored=True)
    dev = _write_tsv(tmp_path / "dev.tsv", _rows(rng, 12), scored=True)
    keras.utils.set_random_seed(0)
    config = _config(tiny_dir, tmp_path / "run", train, eval_file=dev, label_column="score", pooling=["mean"])
    best = finetune(config, strategy=create_strategy("one_device"), **QUIET)
    assert {"pearson", "spearman", "mse"} <= set(best) and -1.0 <= best["spearman"] <= 1.0
    assert read_settings(str(tmp_path / "run"))["pooling"] == ["mean"]  # --pooling replaces --init's
    lines = (tmp_path / "run" / "predictions.tsv").read_text().splitlines()
    assert lines[0] == "index\tcosine\tscore" and len(lines) == 13


def _squad(path, articles):
    data = {"version": "1.1", "data": []}
    for a in range(articles):
        paragraphs = []
        for animal, sound in ANIMALS.items():
            context = f"the {COLOURS[a % 3]} {animal} {sound} ."
            qas = [
                {
                    "id": f"{a}-{animal}",
                    "question": f"which {animal} ?",
                    "answers": [{"text": animal, "answer_start": context.index(animal)}],
                }
            ]
            paragraphs.append({"context": context, "qas": qas})
        data["data"].append({"title": f"article {a}", "paragraphs": paragraphs})
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_squad_files_train_on_question_paragraph_pairs_with_held_out_articles(tiny_dir, tmp_path):
    train = _squad(tmp_path / "train.json", 10)
    keras.utils.set_random_seed(0)
    config = _config(
        tiny_dir, tmp_path / "run", train, text_column=None, text_pair_column=None, eval_every_nth_article=5
    )
    logged = []
    best = finetune(config, strategy=create_strategy("one_device"), log=logged.append)
    # 8 articles of 4 questions train, 2 are held out: 8 queries against their 8 distinct paragraphs.
    assert logged[0].startswith("embedding: 32 training pairs") and "evaluation: 8" in logged[0]
    assert set(best) >= {"recall@1", "mrr@10"} and best["recall@10"] == 1.0


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"text_pair_column": None}, "needs `text_column` and `text_pair_column`"),
        ({"label_column": "score", "negative_column": "negative"}, "without negatives"),
        ({"text_column": None, "text_pair_column": None, "label_column": "score"}, "a SQuAD file"),
        ({"glue_task": "stsb"}, "not GLUE layouts"),
        ({"pooling": ["median"]}, r"`pooling`: pooling must be one of"),
        ({"label_column": "score", "eval_corpus": "passages.txt"}, "without a passage corpus"),
        ({"matryoshka_dims": ["8", "16"]}, r"unique and descending.*matryoshka_dims=\['8', '16'\]"),
        ({"matryoshka_dims": ["16", "16"]}, "unique and descending"),
        ({"matryoshka_dims": ["x"]}, r"matryoshka_dims=\['x'\]"),
        ({"matryoshka_dims": [16, 8], "matryoshka_weights": [1.0]}, r"one positive weight.*matryoshka_weights=\[1.0\]"),
        ({"matryoshka_weights": [1.0]}, "one positive weight per `matryoshka_dims`"),
    ],
)
def test_settings_it_cannot_work_with_are_refused_before_anything_is_written(tiny_dir, tmp_path, overrides, message):
    config = _config(tiny_dir, tmp_path / "run", "unused.tsv", **overrides)
    with pytest.raises(ValueError, match=message):
        finetune(config, **QUIET)
    assert not (tmp_path / "run").exists()


class _Stop(Exception):
    pass


def _newest_checkpoint(run):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(os.path.join(run, "checkpoints")))
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if name != "_CHECKPOINTABLE_OBJECT_GRAPH"
    }


@pytest.mark.slow
def test_an_interrupted_run_resumes_exactly(tiny_dir, pair_files, tmp_path):
    def run(model_dir, log):
        keras.utils.set_random_seed(0)
        config = _config(
            tiny_dir, model_dir, pair_files[0], eval_file=pair_files[1], epochs=3.0, dropout=0.1, evals_per_epoch=2
        )
        return finetune(config, strategy=create_strategy("one_device"), log=log)

    run(str(tmp_path / "whole"), QUIET["log"])

    def stop_at_step_4(message):
        if message.startswith("Evaluating at step 4 "):  # after the checkpoint of step 4
            raise _Stop

    with pytest.raises(_Stop):
        run(str(tmp_path / "cut"), stop_at_step_4)
    logged = []
    run(str(tmp_path / "cut"), logged.append)
    assert any("step 4" in m and "esum" in m for m in logged), logged
    whole, cut = _newest_checkpoint(str(tmp_path / "whole")), _newest_checkpoint(str(tmp_path / "cut"))
    assert whole.keys() == cut.keys() and any("optimizer" in k for k in whole)
    for name in whole:
        np.testing.assert_array_equal(cut[name], whole[name], err_msg=name)


def test_the_task_is_registered_with_its_names():
    task = tasks.get("embedding")
    assert task.model_settings == ("pooling", "normalize") and task.serving_class is EmbeddingModule
    assert "embedding" in tasks.names()


XQUAD = os.path.join(DATA_DIR, "squad", "xquad.en.json")


@pytest.mark.slow
def test_finetuning_minilm_on_xquad_questions_improves_retrieval_of_held_out_articles(minilm_dir, tmp_path):
    """A small version of the README's measurement: 20 steps on the questions of every other XQuAD article, then
    the held-out articles' 578 questions against their 120 paragraphs. Before: recall@5 0.9775, MRR@10 0.9203;
    after, with seeds 0, 1, 2: recall@5 0.9792, 0.9810, 0.9810, MRR@10 0.9272, 0.9281, 0.9242 (2-core AMD EPYC)."""
    config = FinetuneConfig(
        task="embedding",
        init=minilm_dir,
        train_file=XQUAD,
        model_dir=str(tmp_path / "run"),
        eval_every_nth_article=2,
        max_seq_length=128,
        global_batch_size=16,
        train_steps=20,
        learning_rate=5e-5,
        seed=1,
        steps_per_loop=20,
    )
    settings = checkpoints.infer_settings(minilm_dir, 512)
    data = EmbeddingData(config, checkpoints.load_tokenizer(minilm_dir, settings), 512)
    assert (data.num_train, data.num_eval) == (612, 578)
    start = BertSentenceEncoder(checkpoints.load_encoder(minilm_dir), settings["pooling"], settings["normalize"])
    before, _ = data.evaluate(start)
    keras.utils.set_random_seed(1)
    after = finetune(config, strategy=create_strategy("one_device"), **QUIET)
    assert after["recall@5"] > before["recall@5"] and after["mrr@10"] > before["mrr@10"], (before, after)


@pytest.mark.slow
def test_two_replicas_train_with_per_replica_negatives(tiny_dir, pair_files, tmp_path):
    """MirroredStrategy over two logical CPUs: each replica ranks its 4 anchors against its own 4 pairs' texts
    (the loss values are checked in tests/training/embedding_objective_test.py); the run trains and evaluates."""
    keras.utils.set_random_seed(0)
    config = _config(tiny_dir, tmp_path / "run", pair_files[0], eval_file=pair_files[1], train_steps=4)
    logged = []
    best = finetune(config, strategy=mirrored_strategy(["/cpu:0", "/cpu:1"]), log=logged.append)
    assert best["step"] == 4 and 0.0 < best["mrr@10"] <= 1.0
    assert read_settings(str(tmp_path / "run"))["task"] == "embedding"


@pytest.mark.slow
def test_the_app_takes_the_embedding_flags(tiny_dir, pair_files, tmp_path):
    common = [
        "--task=embedding",
        f"--init={tiny_dir}",
        f"--train_file={pair_files[0]}",
        "--text_column=anchor",
        "--text_pair_column=positive",
        "--max_seq_length=16",
        "--global_batch_size=8",
        "--train_steps=2",
    ]
    refused = finetune_app(*common, "--pooling=median", f"--model_dir={tmp_path / 'refused'}")
    assert refused.returncode != 0 and "pooling must be one of" in refused.stderr
    assert not (tmp_path / "refused").exists()
    result = finetune_app(
        *common,
        f"--eval_file={pair_files[1]}",
        "--negative_column=negative",
        "--pooling=max,cls",
        f"--eval_corpus={pair_files[1]}",  # a TSV: its --text_pair_column holds the passages
        f"--model_dir={tmp_path / 'run'}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Best evaluation:" in result.stdout and "mrr@10" in result.stdout
    assert read_settings(str(tmp_path / "run"))["pooling"] == ["max", "cls"]


@pytest.mark.slow
def test_matryoshka_trains_every_prefix_and_evaluates_each_dimension(tiny_dir, pair_files, tmp_path):
    keras.utils.set_random_seed(0)
    config = _config(
        tiny_dir,
        tmp_path / "run",
        pair_files[0],
        eval_file=pair_files[1],
        matryoshka_dims=["32", "16", "8"],  # as the flag gives them (D = 32: cls and mean of hidden 16)
        matryoshka_weights=["1", "1", "0.5"],
        train_steps=4,
    )
    best = finetune(config, strategy=create_strategy("one_device"), **QUIET)
    for dim in (32, 16, 8):
        assert {f"recall@5_dim{dim}", f"mrr@10_dim{dim}"} <= set(best)
    assert best["mrr@10_dim32"] == best["mrr@10"]  # the whole embedding is the first prefix
    refused = _config(tiny_dir, tmp_path / "refused", pair_files[0], matryoshka_dims=[64, 8])
    with pytest.raises(ValueError, match=r"at most the model's embedding dimension 32.*\[64, 8\]"):
        finetune(refused, **QUIET)
    assert not (tmp_path / "refused").exists()
