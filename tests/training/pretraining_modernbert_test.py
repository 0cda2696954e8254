"""`bert-tf-pretrain --model_type=modernbert`: its vocabulary (a byte-level BPE tokenizer.json with BERT's special
tokens), its recipe's model file, and its long-context phase (max_seq_length and the global RoPE theta raised on
resume: accepted and recorded; any other change of the model still refused, naming the flag)."""

import json
import math
import os
import subprocess

import pytest

from bert_tf.config import BertConfig, ConfigError
from bert_tf.training import PretrainConfig, pretrain
from bert_tf.training.pretraining import (
    INCOMPATIBLE,
    _run_global_rope_theta,
    corpus_and_vocab,
    pretraining_tokenizer,
    resume_changes,
)
from bert_tf.training.trainer import ResumeError, newest_step
from tests.launcher import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPES = os.path.join(ROOT, "configs", "recipes")
TEXT = "The module provides functions for files.\nThe function returns a value.\n\n" * 30


def _json(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as f:
        return json.load(f)


def test_modernbert_settings_are_checked_naming_the_field(tmp_path):
    never = str(tmp_path / "never")
    assert PretrainConfig(model_dir=never, model_type="modernbert").run_sentence_objective() == "none"
    with pytest.raises(
        ConfigError, match="a bert model has none.*Received: global_rope_theta=10000.0, model_type='bert'"
    ):
        PretrainConfig(model_dir=never, global_rope_theta=10000.0)
    with pytest.raises(ConfigError, match="positive.*Received: global_rope_theta=0"):
        PretrainConfig(model_dir=never, model_type="modernbert", global_rope_theta=0)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\n")
    with pytest.raises(ConfigError, match="modernbert needs a byte-level BPE.*Received: vocab="):
        PretrainConfig(model_dir=never, model_type="modernbert", vocab=str(vocab))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="a directory without a vocabulary.*Received: vocab="):
        PretrainConfig(model_dir=never, model_type="modernbert", vocab=str(tmp_path / "empty"))
    assert not os.path.exists(never)


def test_a_directory_holding_only_tokenizer_json_is_a_vocabulary(tmp_path):
    """A ModernBERT directory's tokenizer (tokenizer.json alone, no vocab.json) given as --vocab; without --vocab
    the run builds one of that kind into model_dir."""
    from bert_tf.text import build_bert_bpe_vocab

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    build_bert_bpe_vocab([str(corpus)], str(tmp_path / "vocab"), vocab_size=300, show_progress=False)
    assert os.listdir(tmp_path / "vocab") == ["tokenizer.json"]
    for model_type in ("modernbert", "roberta"):  # RoBERTa's check reads the file's kind too
        config = PretrainConfig(
            model_dir=str(tmp_path / model_type),
            model_type=model_type,
            corpus=[str(corpus)],
            vocab=str(tmp_path / "vocab"),
        )
        _, _, vocab_file = corpus_and_vocab(config, log=lambda message: None)
        assert vocab_file == str(tmp_path / "vocab" / "tokenizer.json")
    tokenizer = pretraining_tokenizer(vocab_file, model_type="modernbert")
    assert (tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, tokenizer.mask_id) == (1, 2, 3, 4)
    built = PretrainConfig(
        model_dir=str(tmp_path / "built"), model_type="modernbert", corpus=[str(corpus)], vocab_size=300
    )
    _, _, vocab_file = corpus_and_vocab(built, log=lambda message: None)
    assert vocab_file == str(tmp_path / "built" / "tokenizer.json") and os.path.isfile(vocab_file)


def test_recipe_model_file_is_modernbert_base():
    config = BertConfig.from_json_file(os.path.join(RECIPES, "modernbert_base.json"))
    sizes = (config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.intermediate_size)
    assert config.model_type == "modernbert" and sizes == (22, 768, 12, 1152)
    assert config.local_attention == 128 and config.max_position_embeddings == 8192
    assert (config.global_rope_theta, config.local_rope_theta) == (160000.0, 10000.0)
    assert [i for i, kind in enumerate(config.layer_types) if kind == "full_attention"] == list(range(0, 22, 3))
    assert not (config.norm_bias or config.attention_bias or config.mlp_bias) and config.decoder_bias
    with open(os.path.join(RECIPES, "modernbert_base.cfg"), encoding="utf-8") as f:
        flags = dict(line.strip()[2:].split("=", 1) for line in f if line.startswith("--"))
    assert flags["model"] == "configs/recipes/modernbert_base.json" and flags["model_type"] == "modernbert"
    assert (flags["masking_rate"], flags["sentence_objective"], flags["packing"]) == ("0.3", "none", "full_sentences")
    assert (flags["max_seq_length"], flags["global_rope_theta"]) == ("1024", "10000")  # the short-context phase


def _settings(**changes):
    """A ModernBERT run's training settings (the `INCOMPATIBLE` keys) with `changes` (`model` entries as `model.x`)."""
    model = json.loads(json.dumps(BertConfig.preset("tiny", vocab_size=400).for_family("modernbert").to_dict()))
    settings = dict(
        model=model, vocab_sha256="0" * 64, max_seq_length=32, max_predictions_per_seq=10, global_batch_size=4,
        sentence_objective="none", packing="full_sentences", masking="token", masking_rate=0.3, span_geometric_p=None,
        max_span_length=None, split_special_tokens=False, shuffle_buffer=10000, objective="mlm",
        discriminator_weight=None, generator=None,
    )  # fmt: skip
    assert set(settings) == set(INCOMPATIBLE)
    for key, value in changes.items():
        if key.startswith("model."):
            settings["model"] = dict(settings["model"], **{key[len("model.") :]: value})
        else:
            settings[key] = value
    return settings


def _run_dir(directory, saved, step=2):
    """A model_dir as a run leaves it: training_settings.json and a checkpoint of `step` (its files empty)."""
    os.makedirs(directory / "checkpoints")
    with open(directory / "training_settings.json", "w", encoding="utf-8") as f:
        json.dump(saved, f)
    (directory / "checkpoints" / "checkpoint").write_text(f'model_checkpoint_path: "ckpt-{step}"\n')
    (directory / "checkpoints" / f"ckpt-{step}.index").write_bytes(b"")
    return str(directory)


def test_resume_accepts_and_records_the_long_context_phase_only(tmp_path):
    model_dir = _run_dir(tmp_path / "run", _settings())
    longer = _settings(
        max_seq_length=64, max_predictions_per_seq=20, global_batch_size=2, **{"model.global_rope_theta": 10.0}
    )
    changes, new = resume_changes(model_dir, longer)
    assert new and changes == [
        {
            "step": 2,
            "max_seq_length": [32, 64],
            "max_predictions_per_seq": [10, 20],
            "global_batch_size": [4, 2],
            "model.global_rope_theta": [160000.0, 10.0],
        }
    ]
    assert resume_changes(model_dir, _settings()) == ([], False)  # nothing changed
    recorded = _run_dir(tmp_path / "recorded", dict(longer, resume_changes=changes), step=6)
    assert resume_changes(recorded, longer) == (changes, False)  # an earlier change is kept, not repeated
    for changed, message in (
        ({"model.num_hidden_layers": 3}, r"model.num_hidden_layers \(--model\): checkpoint has 2, this run has 3"),
        ({"model.vocab_size": 500}, r"model.vocab_size \(--vocab_size\)"),
        ({"max_seq_length": 64, "masking_rate": 0.15}, r"masking_rate \(--masking_rate\): checkpoint has 0.3"),
        ({"global_batch_size": 8}, r"global_batch_size \(--global_batch_size\).*only with --max_seq_length"),
    ):
        with pytest.raises(ResumeError, match=message):
            resume_changes(model_dir, _settings(**changed))
    # Another family's run accepts no change here (its loop refuses them all, as before).
    bert = _settings()
    bert["model"] = json.loads(json.dumps(BertConfig.preset("tiny", vocab_size=400).to_dict()))
    bert_dir = _run_dir(tmp_path / "bert", bert)
    assert resume_changes(bert_dir, dict(bert, max_seq_length=64)) == ([], False)
    assert resume_changes(str(tmp_path / "new"), longer) == ([], False)  # no run there yet


def test_global_rope_theta_defaults_to_the_checkpoints_on_resume(tmp_path):
    """A resume without --global_rope_theta keeps the run's theta (the recipe's 10,000 of the short phase), not the
    preset's 160,000: only a theta given on purpose changes it."""
    preset = BertConfig.preset("tiny", vocab_size=400).for_family("modernbert")
    model_dir = _run_dir(tmp_path / "run", _settings(**{"model.global_rope_theta": 10000.0}))
    resumed = PretrainConfig(model_dir=model_dir, model_type="modernbert")
    assert _run_global_rope_theta(resumed, preset) == 10000.0
    raised = PretrainConfig(model_dir=model_dir, model_type="modernbert", global_rope_theta=160000)
    assert _run_global_rope_theta(raised, preset) == 160000.0
    new = PretrainConfig(model_dir=str(tmp_path / "new"), model_type="modernbert")
    assert _run_global_rope_theta(new, preset) == preset.global_rope_theta == 160000.0


@pytest.mark.slow
def test_modernbert_pretrains_converts_and_resumes_its_long_context_phase(tmp_path):
    """A tiny ModernBERT from the default corpus: its own tokenizer.json, a model directory bert_tf and Hugging Face
    read; then resumed with max_seq_length and the global RoPE theta raised: it continues from step 2, records the
    change; a resume with another model size is refused by the app, naming the field and its flag."""
    import tokenizers

    from bert_tf.checkpoints import load_encoder, load_tokenizer
    from bert_tf.tasks import convert_checkpoint

    model_dir = str(tmp_path / "model")
    common = dict(
        model_dir=model_dir, model_type="modernbert", model="tiny", vocab_size=400, global_batch_size=4,
        steps_per_loop=2, checkpoint_steps=2, eval_steps=0, packing="full_sentences", masking_rate=0.3,
        warmup_steps=0, jit_compile=False, fill_mask=["The [MASK] of the function is returned."],
    )  # fmt: skip
    messages = []
    metrics = pretrain(
        PretrainConfig(**common, max_seq_length=32, train_steps=2, global_rope_theta=10000.0), log=messages.append
    )
    assert math.isfinite(metrics["loss"]) and "nsp_loss" not in metrics
    assert "  The [MASK] of the function is returned." in "\n".join(map(str, messages))
    files = set(os.listdir(model_dir))
    assert "tokenizer.json" in files and not files & {"vocab.txt", "vocab.json", "merges.txt"}
    written = _json(model_dir, "bert_config.json")
    assert (written["model_type"], written["global_rope_theta"], written["max_position_embeddings"]) == (
        "modernbert",
        10000.0,
        8192,
    )
    assert written["pad_token_id"] == 3
    encoder, tokenizer = load_encoder(model_dir), load_tokenizer(model_dir)
    assert encoder.model_type == "modernbert" and tokenizer.mask_id == 4
    out = str(tmp_path / "hf")
    convert_checkpoint(model_dir, out, to="hf")
    config = _json(out, "config.json")
    assert config["architectures"] == ["ModernBertForMaskedLM"] and config["pad_token_id"] == 3
    assert config["rope_parameters"]["full_attention"]["rope_theta"] == 10000.0
    text = "The function returns a [MASK] value."
    theirs = tokenizers.Tokenizer.from_file(os.path.join(out, "tokenizer.json")).encode(text, add_special_tokens=False)
    assert tokenizer.tokenize([text]).to_list()[0] == theirs.ids

    messages = []
    metrics = pretrain(
        PretrainConfig(**common, max_seq_length=64, train_steps=4, global_rope_theta=160000.0), log=messages.append
    )
    said = "\n".join(map(str, messages))
    assert "resuming step 2 with" in said and "Resumed from step 2" in said, said
    assert math.isfinite(metrics["loss"]) and newest_step(model_dir) == 4
    change = {
        "step": 2,
        "max_seq_length": [32, 64],
        "max_predictions_per_seq": [10, 20],
        "model.global_rope_theta": [10000.0, 160000.0],
    }
    assert _json(model_dir, "training_settings.json")["resume_changes"] == [change]
    assert _json(model_dir, "bert_tf.json")["resume_changes"] == [change]
    assert _json(model_dir, "bert_tf.json")["max_seq_length"] == 64
    assert _json(model_dir, "bert_config.json")["global_rope_theta"] == 160000.0

    flags = [f"--{key}={value}" for key, value in dict(common, model="mini", fill_mask="").items()]
    result = subprocess.run(
        python_command("-m", "bert_tf.apps.pretrain", *flags, "--max_seq_length=64", "--train_steps=6"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode != 0
    assert "model.num_hidden_layers (--model): checkpoint has 2, this run has 4" in result.stderr, result.stderr[-3000:]
    assert "model.global_rope_theta" not in result.stderr  # not given: the checkpoint's, unchanged
    assert newest_step(model_dir) == 4
