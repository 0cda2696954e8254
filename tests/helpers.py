"""Small builders shared by the tests: tiny encoders, tiny model directories and random batches."""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2

from bert_tf.checkpoints import save_model_dir
from bert_tf.models import BertEncoder
from bert_tf.text import SPECIAL_TOKENS, build_vocab

TINY = dict(
    vocabulary_size=30, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_position_embeddings=32
)


def tiny_encoder(**overrides):
    return BertEncoder(**{**TINY, **overrides})


def tiny_model_dir(directory, words, max_position_embeddings, model_fn=None, seed=0, **settings):
    """A model directory: a random one-layer tiny encoder (or `model_fn(encoder)`, a task model on it) over
    the vocabulary `SPECIAL_TOKENS + words`; `settings` go to `bert_tf.json` (default: lowercase, and
    `max_seq_length` the model's positions). Returns the directory as a str.

    The weights come from `seed`, not from whatever state the global random
    generators are in when a fixture happens to run (that depends on which
    tests ran before it in the same worker, and a rare start fails to learn).
    """
    keras.utils.set_random_seed(seed)
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    pieces = [*SPECIAL_TOKENS, *words]
    vocab = os.path.join(directory, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    encoder = tiny_encoder(vocabulary_size=len(pieces), num_layers=1, max_position_embeddings=max_position_embeddings)
    model = encoder if model_fn is None else model_fn(encoder)
    settings = {"lowercase": True, "max_seq_length": max_position_embeddings, **settings}
    save_model_dir(model, directory, vocab_file=vocab, settings=settings)
    return directory


def tiny_corpus_and_vocab(directory, words, documents, seed=0):
    """`(corpus, vocab)` paths: `documents` random documents of 4 sentences ("lines" format: a sentence per line,
    a blank line between documents) drawn from `words`, and a vocabulary of at most 100 pieces built from it."""
    rng = np.random.default_rng(seed)
    text = "\n\n".join(
        "\n".join(" ".join(rng.choice(words, size=rng.integers(4, 9))) + " ." for _ in range(4))
        for _ in range(documents)
    )
    corpus, vocab = os.path.join(directory, "corpus.txt"), os.path.join(directory, "vocab.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    build_vocab(corpus, vocab, vocab_size=100, show_progress=False)
    return corpus, vocab


def random_inputs(batch=3, length=7, vocabulary_size=30, seed=0, lengths=None):
    """Encoder inputs with random ids; `lengths` (per row) sets padding."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, vocabulary_size, (batch, length)).astype("int32")
    padding_mask = np.ones((batch, length), "int32")
    if lengths is not None:
        for row, n in enumerate(lengths):
            padding_mask[row, n:] = 0
            token_ids[row, n:] = 0
    segment_ids = np.zeros((batch, length), "int32")
    segment_ids[:, length // 2 :] = 1
    segment_ids *= padding_mask
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def pretraining_batch(batch=4, length=8, predictions=3, vocabulary_size=30, seed=0):
    """One `(features, labels, sample_weights)` pretraining batch as in DESIGN.md."""
    rng = np.random.default_rng(seed)
    features = random_inputs(batch, length, vocabulary_size, seed)
    features["mask_positions"] = rng.integers(1, length, (batch, predictions)).astype("int32")
    labels = {
        "mlm": rng.integers(0, vocabulary_size, (batch, predictions)).astype("int32"),
        "nsp": rng.integers(0, 2, (batch,)).astype("int32"),
    }
    weights = {"mlm": np.ones((batch, predictions), "float32"), "nsp": np.ones((batch,), "float32")}
    weights["mlm"][:, -1] = 0.0  # an unused prediction slot
    return features, labels, weights


def free_ports(count):
    """`count` TCP ports on 127.0.0.1 that were free a moment ago (for the workers of a local TF_CONFIG cluster)."""
    # Imported here, not at the top: it loads bert_tf.training, which architecture_test checks the read-only apps
    # (run with these helpers) never load.
    from bert_tf.apps import multiworker

    return multiworker.free_ports("127.0.0.1", count)


def repeated_pretraining_batches(context, batch=8, count=4):
    """A `TrainingLoop` dataset function: `count` fixed pretraining batches of `batch`, repeated forever."""
    del context
    batches = [pretraining_batch(batch=batch, seed=i) for i in range(count)]
    merged = tf.nest.map_structure(lambda *parts: np.concatenate(parts), *batches)
    return tf.data.Dataset.from_tensor_slices(merged).batch(batch).repeat()


SERVING_CLIENT = os.path.join(os.path.dirname(__file__), "export", "serving_client.py")


def serve_blocked(requests, workdir, tag):
    """Runs `requests` ({id: (model, signature, inputs)}) on SavedModels in a process where bert_tf, keras_hub and
    sentencepiece cannot be imported (`tests/export/serving_client.py`).

    Returns:
        (CompletedProcess, {id: {output: ndarray} or {"error": type name}}).
    """
    base = os.path.join(workdir, "client", tag)
    shutil.rmtree(base, ignore_errors=True)
    requests_dir, responses_dir = os.path.join(base, "requests"), os.path.join(base, "responses")
    os.makedirs(responses_dir)
    for request_id, (model, signature, inputs) in requests.items():
        folder = os.path.join(requests_dir, request_id)
        os.makedirs(folder)
        with open(os.path.join(folder, "request.json"), "w", encoding="utf-8") as f:
            json.dump({"model": model, "signature": signature}, f)
        for name, value in inputs.items():
            with open(os.path.join(folder, name + ".pb"), "wb") as f:
                f.write(tf.make_tensor_proto(value).SerializeToString())
    result = subprocess.run(
        [sys.executable, SERVING_CLIENT, requests_dir, responses_dir],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"),
    )
    responses = {}
    for request_id in os.listdir(responses_dir):
        folder = os.path.join(responses_dir, request_id)
        responses[request_id] = {}
        for name in os.listdir(folder):
            if name == "error.json":
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    responses[request_id]["error"] = json.load(f)["type"]
                continue
            proto = tensor_pb2.TensorProto()
            with open(os.path.join(folder, name), "rb") as f:
                proto.ParseFromString(f.read())
            responses[request_id][name[:-3]] = tf.make_ndarray(proto)
    return result, responses


def write_text(path, text):
    """Writes `text` to `path` (UTF-8); returns the path as a str."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def sentiment_tsv(path, n=48, seed=0):
    """A `sentence<TAB>label` TSV of `n` rows where the sentiment word decides the 0/1 label (--glue_task=sst2)."""
    rng = np.random.default_rng(seed)
    rows = ["sentence\tlabel"]
    for _ in range(n):
        label = int(rng.integers(2))
        word = rng.choice(["good", "great", "fine"] if label else ["bad", "awful", "poor"])
        rows.append(f"the movie was {word} .\t{label}")
    return write_text(path, "\n".join(rows) + "\n")


def conll_file(path, n=40, seed=0):
    """A CoNLL-2003 file of `n` sentences (PER and LOC entities; the tag is the last column)."""
    rng = np.random.default_rng(seed)
    lines = ["-DOCSTART- -X- -X- O", ""]
    for _ in range(n):
        if rng.integers(2):
            lines += [
                "john NNP B-NP B-PER",
                "smith NNP I-NP I-PER",
                "went VBD B-VP O",
                "to TO B-PP O",
                "paris NNP B-NP B-LOC",
                ". . O O",
                "",
            ]
        else:
            lines += [
                "the DT B-NP O",
                "actor NN I-NP O",
                "went VBD B-VP O",
                "to TO B-PP O",
                "london NNP B-NP B-LOC",
                ". . O O",
                "",
            ]
    return write_text(path, "\n".join(lines) + "\n")


def squad_file(path, n=12):
    """A SQuAD 1.1 file of `n` one-paragraph articles with a "where" and a "who" question each."""
    paragraphs = []
    for i in range(n):
        who = ["john smith", "the actor"][i % 2]
        where = ["paris", "london"][i // 2 % 2]
        context = f"{who} went to {where} . it was a good film ."
        paragraphs.append(
            {
                "context": context,
                "qas": [
                    {
                        "id": f"q{i}w",
                        "question": "where did the actor go ?",
                        "answers": [{"text": where, "answer_start": context.index(where)}],
                    },
                    {
                        "id": f"q{i}s",
                        "question": "who went to the film ?",
                        "answers": [{"text": who, "answer_start": 0}],
                    },
                ],
            }
        )
    data = {"version": "1.1", "data": [{"title": f"article {i}", "paragraphs": [p]} for i, p in enumerate(paragraphs)]}
    return write_text(path, json.dumps(data))


def tokenizer_module(tokenizer, default_value=0):
    """A `tf.Module` holding `tokenizer`, with `tokenize` (strings `[N]` -> padded ids `[N, P]`) and `detokenize`
    (ids `[N, P]` -> strings) as SavedModel functions."""
    module = tf.Module()
    module.tokenizer = tokenizer
    module.tokenize = tf.function(
        lambda x: tokenizer.tokenize(x).to_tensor(default_value=default_value),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    module.detokenize = tf.function(
        lambda ids: tokenizer.detokenize(ids),
        input_signature=[tf.TensorSpec([None, None], tf.int32)],
    )
    return module


def make_hub_cache(cache_dir, repo_id, source_dir, revision="main"):
    """Lays out the files of `source_dir` as huggingface_hub's cache holds a download of the model `repo_id` at
    `revision`: `cache_dir/models--ORG--NAME/blobs/<sha256>` (each file once), `snapshots/<commit>/...` relative
    symlinks to them (copies where the file system has no symlinks), and `refs/<revision>` holding the commit hash
    (none for a 40-hex commit hash, which is its own snapshot). The commit hash is derived from the files, so two
    revisions of different files get different snapshots. Returns the snapshot directory.

    Tests then set `HF_HUB_CACHE=cache_dir` and `HF_HUB_OFFLINE=1` (monkeypatch.setenv) and read `repo_id`, or
    `repo_id@revision`, wherever a model directory is taken.
    """
    import hashlib

    root = os.path.join(os.fspath(cache_dir), "models--" + repo_id.replace("/", "--"))
    files = []
    for folder, _, names in sorted(os.walk(source_dir)):
        for name in sorted(names):
            path = os.path.join(folder, name)
            digest = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            files.append((os.path.relpath(path, source_dir), path, digest.hexdigest()))
    is_commit = len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)
    commit = revision if is_commit else hashlib.sha1(repr([(n, h) for n, _, h in files]).encode()).hexdigest()
    snapshot = os.path.join(root, "snapshots", commit)
    os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
    for name, path, digest in files:
        blob = os.path.join(root, "blobs", digest)
        if not os.path.exists(blob):
            shutil.copyfile(path, blob)
        target = os.path.join(snapshot, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.lexists(target):
            os.remove(target)
        try:
            os.symlink(os.path.relpath(blob, os.path.dirname(target)), target)
        except OSError:
            shutil.copyfile(blob, target)
    if not is_commit:
        os.makedirs(os.path.dirname(os.path.join(root, "refs", revision)), exist_ok=True)
        with open(os.path.join(root, "refs", revision), "w", encoding="utf-8") as f:
            f.write(commit)  # huggingface_hub writes the hash without a newline
    return snapshot


def tiny_classifier_dir(directory, words, max_position_embeddings, labels=("negative", "positive"), **settings):
    """`tiny_model_dir` of a random `BertClassifier` with a class per label (task "classification")."""
    from bert_tf.models import BertClassifier

    return tiny_model_dir(
        directory,
        words,
        max_position_embeddings,
        model_fn=lambda encoder: BertClassifier(encoder, num_classes=len(labels)),
        task="classification",
        labels=list(labels),
        **settings,
    )


def run_app_main(main, argv):
    """Runs an app's `main` in this process on `argv` (the program name, then its flags), with the flags parsed
    afresh and restored after; returns what `main` returns (its exit code)."""
    from absl import flags
    from absl.testing import flagsaver

    with flagsaver.flagsaver():
        flags.FLAGS.unparse_flags()
        flags.FLAGS(argv)
        return main(argv[:1])


def logged_scalars(model_dir, tag, kind="train"):
    """`(step, value)` of each TensorBoard scalar `tag` the training loop wrote under `model_dir/logs/<kind>`, in
    the order of the event files and their events."""
    import glob

    found = []
    for path in sorted(glob.glob(os.path.join(model_dir, "logs", kind, "*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            found += [(event.step, float(tf.make_ndarray(v.tensor))) for v in event.summary.value if v.tag == tag]
    return found


def kill_9_after_checkpoint(command, checkpoint_glob, timeout=400):
    """Starts `command` (a training app's run), waits until a file matching `checkpoint_glob` is listed, lets the run
    go on for a random part of a second and kills it with SIGKILL, as a machine lost mid-run. Returns whether the run
    had already ended well (exit code 0) before the kill: a fast machine may finish its steps first."""
    import glob
    import signal
    import time

    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + timeout
    while not glob.glob(checkpoint_glob):
        if process.poll() is not None:  # ended: a checkpoint may have been listed since the last look
            assert glob.glob(checkpoint_glob), (
                f"the run ended (exit code {process.returncode}) before its first checkpoint"
            )
            break
        assert time.time() < deadline, f"no checkpoint within {timeout} s"
        time.sleep(0.05)
    time.sleep(np.random.default_rng().uniform(0, 1))
    finished = process.poll() == 0
    process.send_signal(signal.SIGKILL)
    process.wait()
    return finished


# The tiny pretraining runs' corpus words (for tiny_corpus_and_vocab) and their model, batch and schedule: the
# PretrainConfig fields (or bert-tf-pretrain flags) each such test adds its own steps, checkpoints and evaluation to.
TINY_PRETRAINING_WORDS = (
    "the cat dog sat ran on a mat house module function file returned value provides reads writes".split()
)
TINY_PRETRAINING = dict(model="tiny", warmup_steps=1, global_batch_size=4, max_seq_length=32, max_predictions_per_seq=5)
