"""bert-tf-vocab: flags, output, errors before side effects."""

import os
import subprocess

from tests.launcher import python_command


def _run(*args, cwd):
    return subprocess.run(
        python_command("-m", "bert_tf.apps.vocab", *args), cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_builds_vocab_and_reports(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(("hello world, hello there.\n" * 20).encode() + b"caf\xe9\n")
    result = _run(
        f"--input={corpus}",
        "--output=out/vocab.txt",
        "--vocab_size=60",
        "--min_frequency=1",
        "--noprogress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "1 lines with invalid UTF-8" in result.stdout
    with open(tmp_path / "out" / "vocab.txt", encoding="utf-8") as f:
        assert f.readline().strip() == "[PAD]"


def test_bad_flags_exit_nonzero_without_output(tmp_path):
    missing = _run("--output=vocab.txt", cwd=tmp_path)
    assert missing.returncode != 0 and "--input" in missing.stderr
    no_match = _run(f"--input={tmp_path}/none*.txt", "--output=vocab.txt", cwd=tmp_path)
    assert no_match.returncode != 0 and "none*.txt" in no_match.stderr
    small = _run(f"--input={tmp_path}/x", "--output=vocab.txt", "--vocab_size=2", cwd=tmp_path)
    assert small.returncode != 0
    assert not os.path.exists(tmp_path / "vocab.txt")


def test_helpfull_lists_flags(tmp_path):
    result = _run("--helpfull", cwd=tmp_path)
    assert "--vocab_size" in result.stdout + result.stderr and "--min_frequency" in result.stdout + result.stderr


def test_bpe_kind_writes_vocab_json_and_merges_that_tokenize_like_hugging_face(tmp_path):
    import tensorflow as tf
    import tokenizers

    from bert_tf.text import BytePairTokenizer

    lines = ["hello world, hello there.", "It's 2024: naïve café, 東京 \U0001f600!", "  spaced   out  "]
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(("\n".join(lines) + "\n").encode() * 20 + b"caf\xe9\n")
    result = _run(
        "--kind=bpe",
        f"--input={corpus}",
        "--output=out",
        "--vocab_size=400",
        "--min_frequency=1",
        "--noprogress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "pieces to out" in result.stdout and "1 lines with invalid UTF-8" in result.stdout
    vocab, merges = str(tmp_path / "out" / "vocab.json"), str(tmp_path / "out" / "merges.txt")
    ours = BytePairTokenizer(vocab, merges)
    assert [ours.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")] == [0, 1, 2, 3, 4]
    reference = tokenizers.ByteLevelBPETokenizer(vocab, merges)
    texts = lines + ["unseen words, hello!", "hello <s> world </s>"]
    expected = [e.ids for e in reference.encode_batch(texts[:-1], add_special_tokens=False)]
    expected.append(reference.encode("hello ", add_special_tokens=False).ids + [0])
    expected[-1] += reference.encode(" world ", add_special_tokens=False).ids + [2]
    assert ours.tokenize(tf.constant(texts)).to_list() == expected


def test_bert_bpe_kind_writes_one_tokenizer_json_that_tokenizers_and_bert_tf_read_alike(tmp_path):
    """ModernBERT's kind: byte-level BPE with BERT's special tokens at ids 0 to 4 and its [CLS] A [SEP] template."""
    import tensorflow as tf
    import tokenizers

    from bert_tf.checkpoints import load_tokenizer

    lines = ["hello world, hello there.", "It's 2024: naïve café, 東京 \U0001f600!", "  spaced   out  "]
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(lines * 20) + "\n", encoding="utf-8")
    result = _run(
        "--kind=bert_bpe", f"--input={corpus}", "--output=out", "--vocab_size=400", "--min_frequency=1",
        "--noprogress", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["tokenizer.json"]
    reference = tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    assert [reference.token_to_id(t) for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")] == [0, 1, 2, 3, 4]
    ours = load_tokenizer(str(tmp_path / "out"))
    texts = lines + ["unseen words, hello!"]
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert ours.tokenize(tf.constant(texts)).to_list() == expected
    assert reference.encode("hello").ids[0] == 1 and reference.encode("hello").ids[-1] == 2
    lowercase = _run("--kind=bert_bpe", f"--input={corpus}", "--output=x", "--nolowercase", cwd=tmp_path)
    assert lowercase.returncode != 0 and "--kind=wordpiece only" in lowercase.stderr


def test_bpe_kind_flag_errors(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n" * 10)
    lowercase = _run("--kind=bpe", f"--input={corpus}", "--output=out", "--nolowercase", cwd=tmp_path)
    assert lowercase.returncode != 0 and "--kind=wordpiece only" in lowercase.stderr
    (tmp_path / "file").write_text("x")
    not_dir = _run("--kind=bpe", f"--input={corpus}", "--output=file", cwd=tmp_path)
    assert not_dir.returncode != 0 and "must be a directory" in not_dir.stderr
    small = _run("--kind=bpe", f"--input={corpus}", "--output=out", "--vocab_size=100", cwd=tmp_path)
    assert small.returncode == 1 and "256 bytes" in small.stderr
    unknown = _run("--kind=sentencepiece", f"--input={corpus}", "--output=out", cwd=tmp_path)
    assert unknown.returncode != 0 and "--kind" in unknown.stderr
    assert not os.path.exists(tmp_path / "out")


def test_unigram_kind_writes_a_model_that_reads_as_its_tokenizer_json(tmp_path):
    import tensorflow as tf
    import tokenizers

    from bert_tf import checkpoints

    lines = ["Hello world, hello there.", "It's 2024: naive cafe, the fox!", "  spaced   out  "]
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(("\n".join(lines) + "\n").encode() * 20 + b"caf\xe9\n")
    result = _run(
        "--kind=unigram", f"--input={corpus}", "--output=out", "--vocab_size=60", "--noprogress", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert "pieces to out/spiece.model" in result.stdout and "1 lines with invalid UTF-8" in result.stdout
    assert sorted(os.listdir(tmp_path / "out")) == ["spiece.model", "tokenizer.json", "tokenizer_config.json"]
    ours = checkpoints.load_tokenizer(str(tmp_path / "out"))
    assert [ours.pad_id, ours.unk_id, ours.cls_id, ours.sep_id, ours.mask_id] == [0, 1, 2, 3, 4]
    reference = tokenizers.Tokenizer.from_file(str(tmp_path / "out" / "tokenizer.json"))
    texts = lines + ["UNSEEN words [MASK] here", "x[SEP]y"]
    expected = [e.ids for e in reference.encode_batch(texts, add_special_tokens=False)]
    assert ours.tokenize(tf.constant(texts)).to_list() == expected


def test_unigram_kind_flag_errors(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\n" * 10)
    (tmp_path / "file").write_text("x")
    not_dir = _run("--kind=unigram", f"--input={corpus}", "--output=file", cwd=tmp_path)
    assert not_dir.returncode != 0 and "must be a directory" in not_dir.stderr
    family = _run(f"--input={corpus}", "--output=v.txt", "--family=deberta-v2", cwd=tmp_path)
    assert family.returncode != 0 and "--family applies to --kind=unigram only" in family.stderr
    assert not os.path.exists(tmp_path / "v.txt")
