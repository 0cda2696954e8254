"""`checkpoints.hub`: Hugging Face Hub ids (`org/name[@revision]`, legacy `name`) wherever a model directory is taken,
read from a huggingface_hub cache laid out by `tests.helpers.make_hub_cache`; never the network (HF_HUB_OFFLINE=1,
or a snapshot_download that fails to connect)."""

import json
import os
import shutil

import numpy as np
import pytest

from bert_tf import checkpoints, tasks
from bert_tf.checkpoints import CheckpointError, ModelDirectory, hub
from tests.conftest import MINILM_HUB_ID, REFERENCE_DIR
from tests.helpers import make_hub_cache

FAMILIES_DIR = os.path.join(REFERENCE_DIR, "families")


@pytest.fixture
def offline_cache(hub_cache, monkeypatch):
    """The session's hub cache (MiniLM at `MINILM_HUB_ID`), read offline."""
    monkeypatch.setenv("HF_HUB_CACHE", hub_cache)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub_cache


@pytest.fixture
def tiny_cache(tmp_path, monkeypatch):
    """A cache of its own holding `org/tiny-bert` at main (the reference `bert`) and at tag v2 (`bert-cls`), and the
    legacy id `tiny-electra` (the reference `electra`), read offline."""
    cache = tmp_path / "hub"
    snapshots = {
        "main": make_hub_cache(cache, "org/tiny-bert", os.path.join(FAMILIES_DIR, "bert")),
        "v2": make_hub_cache(cache, "org/tiny-bert", os.path.join(FAMILIES_DIR, "bert-cls"), revision="v2"),
        "electra": make_hub_cache(cache, "tiny-electra", os.path.join(FAMILIES_DIR, "electra")),
    }
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return snapshots


def test_parse_hub_id():
    assert hub.parse_hub_id("org/name") == ("org/name", None)
    assert hub.parse_hub_id("org/name@v1.0") == ("org/name", "v1.0")
    assert hub.parse_hub_id("bert-base-uncased") == ("bert-base-uncased", None)
    for not_an_id in ("/abs/path", "a/b/c", "./model", "org/name@", "org--x/name", "runs/my model", ""):
        assert hub.parse_hub_id(not_an_id) is None, not_an_id


def test_cache_layout_is_huggingface_hubs(tiny_cache):
    """What huggingface_hub itself finds in the cache the helper lays out: the snapshot, its symlinked blobs."""
    from huggingface_hub import snapshot_download

    found = snapshot_download("org/tiny-bert", cache_dir=os.environ["HF_HUB_CACHE"], local_files_only=True)
    assert os.path.realpath(found) == os.path.realpath(tiny_cache["main"])
    config = os.path.join(found, "config.json")
    assert os.path.islink(config) and "/blobs/" in os.path.realpath(config)


def test_an_id_through_model_directory_and_load_encoder(tiny_cache):
    directory = ModelDirectory.read("org/tiny-bert")
    assert directory.path == tiny_cache["main"] and directory.format == "hf"
    assert directory.hub_id == directory.name == "org/tiny-bert"
    assert directory == ModelDirectory.read(tiny_cache["main"])  # the same checkpoint, whatever named it
    encoder = checkpoints.load_encoder("org/tiny-bert")
    local = checkpoints.load_encoder(os.path.join(FAMILIES_DIR, "bert"))
    for ours, theirs in zip(encoder.weights, local.weights, strict=True):
        if not ours.path.startswith("pooler/"):  # not in the checkpoint: freshly initialised
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert checkpoints.load_config("tiny-electra").model_type == "electra"  # a legacy id, without organisation


def test_an_electra_pair_by_id_with_its_generator_folder(tmp_path, monkeypatch):
    """An ELECTRA pretraining pair on the Hub (`generator/` beside the discriminator) loads by id."""
    from bert_tf.models import ElectraPretrainer
    from tests.checkpoints.electra_pretraining_test import REFERENCE as ELECTRA_PAIR

    snapshot = make_hub_cache(tmp_path / "hub", "org/electra-pair", ELECTRA_PAIR)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert checkpoints.generator_dir("org/electra-pair") == os.path.join(snapshot, "generator")
    assert isinstance(checkpoints.load_pretrainer("org/electra-pair"), ElectraPretrainer)


def test_revision(tiny_cache):
    assert ModelDirectory.read("org/tiny-bert@v2").path == tiny_cache["v2"]
    assert ModelDirectory.read("org/tiny-bert@v2").hf_config["architectures"] == ["BertForSequenceClassification"]
    model, settings = tasks.load_model("org/tiny-bert@v2")  # a task model, by id at a revision
    assert type(model).__name__ == "BertClassifier" and settings["task"] == "classification"
    commit = os.path.basename(tiny_cache["main"])
    assert ModelDirectory.read(f"org/tiny-bert@{commit}").path == tiny_cache["main"]  # a commit hash
    with pytest.raises(CheckpointError, match="org/tiny-bert@v3.*hf download org/tiny-bert --revision v3"):
        ModelDirectory.read("org/tiny-bert@v3")


def test_an_id_not_in_the_cache_is_one_line_naming_it(tiny_cache):
    with pytest.raises(CheckpointError) as raised:
        checkpoints.load_encoder("org/not-fetched")
    message = str(raised.value)
    assert "\n" not in message and "org/not-fetched" in message and "`hf download org/not-fetched`" in message
    assert "HF_HUB_OFFLINE=1" in message and os.environ["HF_HUB_CACHE"] in message
    # A path that is no id is the usual "does not exist", without a look at the cache.
    with pytest.raises(CheckpointError, match="does not exist: /no/such/model. Looked for"):
        ModelDirectory.read("/no/such/model")


def test_a_local_directory_named_like_an_id_wins(tiny_cache, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(os.path.join(FAMILIES_DIR, "electra"), tmp_path / "org" / "tiny-bert")
    directory = ModelDirectory.read("org/tiny-bert")
    assert directory.path == "org/tiny-bert" and directory.hub_id is None and directory.model_type == "electra"


def test_the_network_failing_falls_back_to_the_cache(tiny_cache, monkeypatch):
    """Online (no HF_HUB_OFFLINE), a connection error retries from the cache; nothing reaches the network."""
    import httpx2
    import huggingface_hub

    calls = []
    real = huggingface_hub.snapshot_download

    def unreachable(repo_id, **kwargs):
        calls.append(kwargs["local_files_only"])
        if not kwargs["local_files_only"]:
            raise httpx2.ConnectError("no route to host")
        return real(repo_id, **kwargs)

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    assert hub.resolve_model_path("org/tiny-bert") == tiny_cache["main"]
    assert calls == [False, True]
    # What is fetched: the files bert_tf reads, never pickles.
    with pytest.raises(CheckpointError, match="could not be reached.*hf download org/other"):
        hub.resolve_model_path("org/other")


def test_allow_patterns_fetch_what_bert_tf_reads_and_never_pickles():
    from huggingface_hub.utils import filter_repo_objects

    repo = [
        "config.json",
        "model.safetensors",
        "model-00001-of-00002.safetensors",
        "model.safetensors.index.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.txt",
        "vocab.json",
        "merges.txt",
        "spiece.model",
        "sentencepiece.bpe.model",
        "modules.json",
        "sentence_bert_config.json",
        "config_sentence_transformers.json",
        "1_Pooling/config.json",
        "generator/config.json",
        "generator/model.safetensors",
        "bert_tf.json",
        "bert_config.json",
        "bert_model.ckpt.index",
        "bert_model.ckpt.data-00000-of-00001",
    ]
    unwanted = [
        "pytorch_model.bin",
        "tf_model.h5",
        "flax_model.msgpack",
        "rust_model.ot",
        "onnx/model.onnx",
        "onnx/config.json",
        "openvino/openvino_model.xml",
        "training_args.bin",
        "README.md",
        "optimizer.pt",
    ]
    kept = list(
        filter_repo_objects(repo + unwanted, allow_patterns=hub.ALLOW_PATTERNS, ignore_patterns=hub.IGNORE_PATTERNS)
    )
    assert kept == repo


def test_sentence_embedder_by_id(offline_cache):
    """`SentenceEmbedder("sentence-transformers/all-MiniLM-L6-v2")` from the cache embeds as the MiniLM folder does
    (sentence-transformers' embeddings of it, `minilm_reference.json`)."""
    from bert_tf.embeddings import SentenceEmbedder

    with open(os.path.join(REFERENCE_DIR, "minilm_reference.json"), encoding="utf-8") as f:
        reference = json.load(f)["single"][:2]
    embedder = SentenceEmbedder(MINILM_HUB_ID)
    assert embedder.max_seq_length == 256  # the folder's sentence-transformers modules were read
    embeddings = embedder.encode([example["text"] for example in reference])
    np.testing.assert_allclose(embeddings, [example["sentence_embedding"] for example in reference], atol=1e-4)


def _export(**values):
    """bert-tf-export's main() in this process with the given flags; its exit code."""
    from absl import flags
    from absl.testing import flagsaver

    from bert_tf.apps import export as app

    argv = ["export"] + [f"--{k}={v}" for k, v in values.items()]
    with flagsaver.flagsaver():
        flags.FLAGS.unparse_flags()
        flags.FLAGS(argv)
        return app.main(argv[:1])


def test_apps_take_an_id(tiny_cache, tmp_path):
    """The apps' checkpoint flags (`common_flags.check_checkpoint_dir`) take an id; one not in the cache is one
    usage-error line naming it and the command that fetches it, before anything is written."""
    from absl import app, flags

    from bert_tf.apps.common_flags import check_checkpoint_dir

    values = flags.FlagValues()
    flags.DEFINE_string("model_dir", None, "", flag_values=values)
    values(["app", "--model_dir=org/tiny-bert@v2"])
    assert check_checkpoint_dir("model_dir", values).path == tiny_cache["v2"]
    with pytest.raises(app.UsageError) as raised:
        _export(model_dir="org/not-fetched", output_dir=tmp_path / "other")
    assert "\n" not in str(raised.value) and str(raised.value).startswith("--model_dir: ")
    assert "`hf download org/not-fetched`" in str(raised.value)
    assert not (tmp_path / "other").exists()


@pytest.mark.slow
def test_embed_file_by_id(tmp_path, monkeypatch):
    """`embed_file("org/name", ...)` (bert-tf-embed --model_dir=org/name) embeds as the directory does and records the
    id in its manifest."""
    from bert_tf.embeddings import SentenceEmbedder, embed_file
    from tests.helpers import tiny_model_dir

    source = tiny_model_dir(tmp_path / "encoder", ["good", "bad", "movie", "the"], max_position_embeddings=16)
    make_hub_cache(tmp_path / "hub", "org/tiny-encoder", source)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    texts = ["the movie", "good", "bad movie"]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    manifest = embed_file("org/tiny-encoder", str(corpus), str(tmp_path / "out"), max_seq_length=8, show_progress=False)
    assert manifest["model"] == "org/tiny-encoder" and "config.json" not in manifest["model_files"]
    assert "bert_config.json" in manifest["model_files"]
    expected = SentenceEmbedder(source, max_seq_length=8).encode(texts)
    np.testing.assert_allclose(np.load(tmp_path / "out" / "embeddings.npy"), expected, atol=1e-6)


@pytest.mark.slow
def test_export_app_takes_an_id(tmp_path, monkeypatch):
    """`bert-tf-export --model_dir=org/name`: a tiny fine-tuned classifier from the cache."""
    import tensorflow as tf

    from bert_tf.models import BertClassifier
    from tests.helpers import tiny_model_dir

    source = tiny_model_dir(
        tmp_path / "classifier",
        ["good", "bad", "movie", "the", "was", "."],
        max_position_embeddings=16,
        model_fn=lambda encoder: BertClassifier(encoder, num_classes=2),
        max_seq_length=12,
        task="classification",
        labels=["negative", "positive"],
    )
    make_hub_cache(tmp_path / "hub", "org/tiny-classifier", source)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    output = tmp_path / "exported"
    assert _export(model_dir="org/tiny-classifier", output_dir=output) == 0
    got = tf.saved_model.load(str(output)).signatures["serving_default"](text=tf.constant(["the movie was good ."]))
    assert got["label"].numpy()[0].decode() in ("negative", "positive")


@pytest.mark.slow
def test_export_app_exports_minilm_by_id(offline_cache, minilm_saved_model, tmp_path):
    """`bert-tf-export --model_dir=sentence-transformers/all-MiniLM-L6-v2` exports what the MiniLM folder does."""
    import tensorflow as tf

    output = tmp_path / "minilm"
    assert _export(model_dir=MINILM_HUB_ID, output_dir=output) == 0
    texts = tf.constant(["A man is eating food.", "Ein Mann isst."])
    ours = tf.saved_model.load(str(output)).signatures["serving_default"](text=texts)["sentence_embedding"]
    expected = tf.saved_model.load(minilm_saved_model[0]).signatures["serving_default"](text=texts)[
        "sentence_embedding"
    ]
    np.testing.assert_allclose(ours.numpy(), expected.numpy(), atol=1e-6)


@pytest.mark.slow
def test_finetune_init_by_id(tiny_cache, tmp_path):
    """`finetune(init="org/tiny-bert")` trains from the cache and records the id it was given."""
    from bert_tf.training.finetuning import FinetuneConfig, finetune
    from bert_tf.training.trainer import read_training_settings
    from tests.checkpoints.model_directory_test import _task_data

    model_dir = str(tmp_path / "ft")
    finetune(FinetuneConfig(task="classification", init="org/tiny-bert", model_dir=model_dir, **_task_data(tmp_path)))
    assert read_training_settings(model_dir)["init"] == "org/tiny-bert"
    assert checkpoints.load_config(model_dir) == checkpoints.load_config(tiny_cache["main"])
