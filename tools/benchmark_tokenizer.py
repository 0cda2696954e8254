"""Tokenizer throughput: bert_tf vs Hugging Face tokenizers vs keras-hub (vs the sentencepiece library).

Prints a markdown table of MB/s (input UTF-8 bytes per second) on the same
lines for:
  * bert_tf.text.BertTokenizer.tokenize inside a tf.function, batched;
  * bert_tf.text.BertTokenizer.tokenize_with_offsets, likewise;
  * tokenizers.BertWordPieceTokenizer.encode_batch (the reference);
  * keras_hub.tokenizers.BertTokenizer, batched.

With `--bpe_vocab` and `--bpe_merges` (a byte-level BPE vocab.json and
merges.txt, e.g. RoBERTa's), a second table times, on the same lines:
  * bert_tf.text.BytePairTokenizer.tokenize and tokenize_with_offsets;
  * tokenizers.ByteLevelBPETokenizer.encode_batch (the reference, with
    RoBERTa's special tokens);
  * keras_hub.tokenizers.BytePairTokenizer, batched;
and the share of lines on which each gives the reference's ids.

With `--sentencepiece` (a folder with a unigram `tokenizer.json` and its
`.model`, e.g. ALBERT's or DeBERTa's), a third table times, on the same lines:
  * bert_tf.text.SentencePieceTokenizer.tokenize and tokenize_with_offsets;
  * tokenizers.Tokenizer.from_file(tokenizer.json).encode_batch (the reference);
  * sentencepiece.SentencePieceProcessor.encode of the `.model` (the library's
    own normalization: not the family's, so its agreement is informative only);
and the share of lines on which each gives the reference's ids.

The sides run interleaved, `--repeats` rounds, so that load from other
processes hits them alike; in a round each side passes over the text as many
times as fill `--min_seconds` (0.25 s; a single 10 ms pass times the thread
pools' wake-up more than the work) and its mean pass counts. The table gives
medians, and "x HF" is the median over rounds of (reference seconds / row
seconds) in the same round.

With `--multilingual` (a glob of UDHR samples, e.g. '../shared/data/multilingual/udhr/*', each
decoded with the encoding its NLTK name gives: tools/udhr_text.py), a table per casing
(`--lowercase`) times, per file (its lines repeated to `--multilingual_megabytes`) and for all
files together:
  * bert_tf.text.BertTokenizer.tokenize and tokenize_with_offsets in a tf.function, batched;
  * the same tokenize as a tf.data map over batches, `num_parallel_calls=AUTOTUNE` and one call at a
    time (steady state of one iterator over the first batch repeated);
  * tokenizers.BertWordPieceTokenizer.encode_batch as users call it (every core), and with
    `TOKENIZERS_PARALLELISM=false` (one thread) for context;
and whether ids and character offsets equal Hugging Face's on every line of the file. With `--sentencepiece` as
well (e.g. ../shared/reference/families/xlm-roberta), the same table for its `SentencePieceTokenizer` against
`tokenizers.Tokenizer.from_file(tokenizer.json)` (XLM-R's: every script, cased).

With `--pipeline_corpus`, it also times pretraining batches made from raw text
by `bert_tf.data.pretraining.pretraining_dataset` (max_seq_length 128, batch 32,
"paragraphs" format): examples/s over `--pipeline_batches` batches after
`--pipeline_warmup_batches`, median of `--repeats` consecutive windows.

Usage:
  python tools/benchmark_tokenizer.py --vocab=path/to/vocab.txt \\
      --input='../shared/data/corpus/*/*' --batch_size=4096 \\
      --pipeline_corpus=../shared/data/corpus/wikitext2/wiki.test.raw
  python tools/benchmark_tokenizer.py --vocab=path/to/vocab.txt --input=../shared/data/corpus/wikitext2/wiki.test.raw \\
      --multilingual='../shared/data/multilingual/udhr/*' --nolowercase
  python tools/benchmark_tokenizer.py --bpe_vocab=DIR/vocab.json --bpe_merges=DIR/merges.txt \\
      --input=../shared/data/corpus/wikitext2/wiki.test.raw
  python tools/benchmark_tokenizer.py --sentencepiece=tests/data/sentencepiece/albert \\
      --input=../shared/data/corpus/wikitext2/wiki.test.raw
  python tools/benchmark_tokenizer.py --sentencepiece=../shared/reference/families/xlm-roberta \\
      --input='../shared/data/multilingual/udhr/*' --multilingual='../shared/data/multilingual/udhr/*'
"""

import glob
import os
import platform
import statistics
import sys

from absl import app, flags

if not __package__:  # run as `python tools/NAME.py`: import `tools.*` (and `bert_tf`) from this checkout
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import udhr_text
from tools.bench.harness import median_rates, seconds_per_call
from tools.bench.work import pretraining_batches

FLAGS = flags.FLAGS
flags.DEFINE_string("vocab", None, "WordPiece vocab.txt (the WordPiece table; unset: none).")
flags.DEFINE_string("bpe_vocab", None, "Byte-level BPE vocab.json (the BPE table, with --bpe_merges; unset: none).")
flags.DEFINE_string("bpe_merges", None, "Byte-level BPE merges.txt (with --bpe_vocab).")
flags.DEFINE_string(
    "sentencepiece", None, "Folder with a unigram tokenizer.json and its .model (the SentencePiece table; unset: none)."
)
flags.DEFINE_string("input", None, "Glob of text files (one example a line).", required=True)
flags.DEFINE_integer("batch_size", 4096, "Lines per call.")
flags.DEFINE_boolean("lowercase", True, "Uncased (True) or cased (False).")
flags.DEFINE_integer("repeats", 5, "Timed rounds; medians are reported.")
flags.DEFINE_float(
    "min_seconds", 0.25, "Each side of a round is called again until this many seconds are spent (its mean is taken)."
)
flags.DEFINE_string(
    "pipeline_corpus",
    None,
    "Text file(s) for the pretraining pipeline row (corpus_format='paragraphs'); unset: no pipeline row.",
)
flags.DEFINE_string(
    "multilingual", None, "Glob of UDHR samples for the per-script table (needs --vocab; unset: no such table)."
)
flags.DEFINE_float("multilingual_megabytes", 1.0, "Each file's lines are repeated to about this many MB.")
flags.DEFINE_integer("pipeline_warmup_batches", 20, "Pipeline batches skipped before timing.")
flags.DEFINE_integer("pipeline_batches", 100, "Pipeline batches per window.")


def _seconds(fn, floor=None):
    """Seconds of one call of `fn`, over as many calls as fill `floor` seconds (default `--min_seconds`; at least one):
    `tools.bench.harness.seconds_per_call`."""
    return seconds_per_call(fn, FLAGS.min_seconds if floor is None else floor)


def _pipeline_examples_per_second(tokenizer):
    """Median examples/s of pretraining batches over `--repeats` windows of `--pipeline_batches` batches."""
    batch_size = 32
    iterator = pretraining_batches(FLAGS.pipeline_corpus, tokenizer, batch_size)
    rates = median_rates(
        {"pipeline": lambda: next(iterator)},
        batch_size,
        FLAGS.pipeline_batches,
        FLAGS.pipeline_warmup_batches,
        FLAGS.repeats,
    )
    return rates["pipeline"]


def _time_table(rows, reference_name, megabytes, title, agreement=None):
    """Times `rows` ([(name, fn)]) interleaved and prints the markdown table."""
    for _, fn in rows:
        fn()  # warm-up (tracing, caches)
    seconds = {name: [] for name, _ in rows}
    for _ in range(FLAGS.repeats):
        for name, fn in rows:
            seconds[name].append(_seconds(fn))
    print(f"\n{title}, median of {FLAGS.repeats} interleaved rounds\n")
    columns = "| tokenizer | seconds | MB/s | x HF |" + (" same ids as HF |" if agreement else "")
    print(columns)
    print("|---|---:|---:|---:|" + ("---:|" if agreement else ""))
    for name, _ in rows:
        median = statistics.median(seconds[name])
        if reference_name is None:
            ratio = "-"
        else:
            ratio = "%.1f" % statistics.median(r / s for r, s in zip(seconds[reference_name], seconds[name]))
        same = f" {agreement[name]} |" if agreement else ""
        print(f"| {name} | {median:.2f} | {megabytes / median:.1f} | {ratio} |{same}")


def _sides_table(sides, reference_name, batch_count, megabytes, title):
    """`_time_table` of `sides` (`{name: (timed run, ids of batch i)}`), with each side's share of lines whose ids
    are the reference's over the `batch_count` batches."""
    ids = {name: [row for i in range(batch_count) for row in side[1](i)] for name, side in sides.items()}
    agreement = {
        name: "%.2f%%" % (100 * sum(a == b for a, b in zip(rows, ids[reference_name])) / max(len(rows), 1))
        for name, rows in ids.items()
    }
    rows = [(name, side[0]) for name, side in sides.items()]
    _time_table(rows, reference_name, megabytes, title, agreement)


def _wordpiece_table(batches, texts, megabytes):
    import tensorflow as tf

    from bert_tf.text import BertTokenizer

    size = FLAGS.batch_size
    rows = []
    ours = BertTokenizer(FLAGS.vocab, lowercase=FLAGS.lowercase)
    tokenize = tf.function(ours.tokenize)
    with_offsets = tf.function(ours.tokenize_with_offsets)

    def run_ours():
        for batch in batches:
            tokenize(batch).flat_values.numpy()

    def run_ours_offsets():
        for batch in batches:
            with_offsets(batch)[0].flat_values.numpy()

    rows.append(("bert_tf BertTokenizer.tokenize (tf.function)", run_ours))
    rows.append(("bert_tf BertTokenizer.tokenize_with_offsets", run_ours_offsets))

    reference_name = None
    try:
        import tokenizers

        reference = tokenizers.BertWordPieceTokenizer(FLAGS.vocab, lowercase=FLAGS.lowercase)
        reference._tokenizer.encode_special_tokens = True

        def run_reference():
            for i in range(0, len(texts), size):
                reference.encode_batch(texts[i : i + size], add_special_tokens=False)

        reference_name = "HF tokenizers BertWordPieceTokenizer.encode_batch"
        rows.append((reference_name, run_reference))
    except ImportError:
        print("tokenizers is not installed: skipped")

    try:
        import keras_hub

        hub = keras_hub.tokenizers.BertTokenizer(vocabulary=FLAGS.vocab, lowercase=FLAGS.lowercase)
        hub_fn = tf.function(hub.tokenize)

        def run_hub():
            for batch in batches:
                hub_fn(batch).flat_values.numpy()

        rows.append(("keras_hub BertTokenizer (tf.function)", run_hub))
    except ImportError:
        print("keras-hub is not installed: skipped")

    title = f"WordPiece: {len(texts)} lines, {megabytes:.1f} MB, batch_size={size}, lowercase={FLAGS.lowercase}"
    _time_table(rows, reference_name, megabytes, title)
    return ours


def cpu_line():
    """The CPU model, its logical cores and the flags that matter for speed, from /proc/cpuinfo."""
    model, features = platform.processor() or platform.machine(), []
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name") and model in ("", platform.machine(), platform.processor()):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not features:
                    present = set(line.split(":", 1)[1].split())
                    features = [x for x in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if x in present]
    except OSError:
        pass
    return f"CPU: {model}, {os.cpu_count()} logical cores, {' '.join(features) or 'no AVX2'}"


def _multilingual_tokenizers(kind):
    """`(title, bert_tf's tokenizer, the HF reference)` of the per-script table of `kind`: "wordpiece" (`--vocab`,
    `--lowercase`) or "sentencepiece" (`--sentencepiece`'s tokenizer.json, e.g. XLM-R's, cased as the file says)."""
    import tokenizers

    from bert_tf.text import BertTokenizer, SentencePieceTokenizer

    if kind == "wordpiece":
        ours = BertTokenizer(FLAGS.vocab, lowercase=FLAGS.lowercase)
        reference = tokenizers.BertWordPieceTokenizer(FLAGS.vocab, lowercase=FLAGS.lowercase)
        return f"WordPiece per script (UDHR), lowercase={FLAGS.lowercase}", ours, reference
    path = os.path.join(FLAGS.sentencepiece, "tokenizer.json")
    ours = SentencePieceTokenizer.from_tokenizer_json(path)
    title = f"SentencePiece ({ours.family}, {ours.vocab_size} ids, {path}) per script (UDHR), as the file is cased"
    return title, ours, tokenizers.Tokenizer.from_file(path)


def _multilingual_table(kind="wordpiece"):
    """Per UDHR file and all files together: bert_tf vs HF `tokenizers` MB/s and agreement (see the docstring)."""
    import tensorflow as tf

    paths = sorted(glob.glob(FLAGS.multilingual))
    if not paths:
        raise app.UsageError(f"--multilingual matches no file. Received: {FLAGS.multilingual}")
    size = FLAGS.batch_size
    title, ours, reference = _multilingual_tokenizers(kind)
    tokenize = tf.function(lambda x: ours.tokenize(x).flat_values, input_signature=[tf.TensorSpec([None], tf.string)])
    with_offsets = tf.function(
        lambda x: ours.tokenize_with_offsets(x)[1].flat_values, input_signature=[tf.TensorSpec([None], tf.string)]
    )
    texts = {os.path.basename(p): (udhr_text.script_of(p), udhr_text.read_lines(p)) for p in paths}
    texts["all files"] = ("all", [line for _, lines in texts.values() for line in lines])

    print(
        f"\n{title}, batch_size={size}, each text repeated to "
        f"{FLAGS.multilingual_megabytes} MB; MB/s medians of {FLAGS.repeats} interleaved rounds, x HF = median of "
        "per-round ratios to HF encode_batch (every core); same ids/offsets: lines of the file equal to HF's\n"
    )
    print(f"{cpu_line()}\n")
    print(
        "| text | script | MB | bert_tf tokenize | bert_tf tokenize_with_offsets | bert_tf tf.data parallel map | "
        "bert_tf tf.data map, 1 call | HF encode_batch | HF 1 thread | x HF | offsets x HF | tf.data x HF | "
        "tf.data 1 call x HF | same ids | same offsets |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, (script, lines) in texts.items():
        print(_multilingual_row(ours, tokenize, with_offsets, reference, label, script, lines), flush=True)


def _multilingual_row(ours, tokenize, with_offsets, reference, label, script, original):
    """One row of the per-script table: `original` (str lines) repeated to --multilingual_megabytes, timed."""
    import tensorflow as tf

    size = FLAGS.batch_size
    lines = udhr_text.repeated(original, FLAGS.multilingual_megabytes)
    megabytes = sum(len(line.encode("utf-8")) for line in lines) / 1e6
    text_batches = [lines[i : i + size] for i in range(0, len(lines), size)]
    batches = [tf.constant([t.encode("utf-8") for t in b]) for b in text_batches]
    # The tf.data rows map the first batch again and again (its size is known), in parallel and one call at a
    # time; the map runs ahead while other sides are timed, so the buffered results are taken first.
    first_megabytes = sum(len(t.encode("utf-8")) for t in text_batches[0]) / 1e6
    pipeline_batches = max(8, round(megabytes / first_megabytes))
    iterators = {
        calls: iter(tf.data.Dataset.from_tensors(batches[0]).repeat().map(ours.tokenize, num_parallel_calls=calls))
        for calls in (tf.data.AUTOTUNE, None)
    }

    def steady_pipeline(calls):
        iterator = iterators[calls]
        [next(iterator) for _ in range(2 * (os.cpu_count() or 1) + 2)]
        # Seconds per `megabytes`, the other sides' pass.
        spent = _seconds(lambda: [next(iterator).flat_values.numpy() for _ in range(pipeline_batches)])
        return spent * megabytes / (pipeline_batches * first_megabytes)

    def one_thread():
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        try:
            [reference.encode_batch(b, add_special_tokens=False) for b in text_batches]
        finally:
            os.environ["TOKENIZERS_PARALLELISM"] = "true"

    sides = {
        "tokenize": lambda: _seconds(lambda: [tokenize(b).numpy() for b in batches]),
        "offsets": lambda: _seconds(lambda: [with_offsets(b).numpy() for b in batches]),
        "tf.data": lambda: steady_pipeline(tf.data.AUTOTUNE),
        "tf.data 1 call": lambda: steady_pipeline(None),
        "HF": lambda: _seconds(lambda: [reference.encode_batch(b, add_special_tokens=False) for b in text_batches]),
        "HF 1 thread": lambda: _seconds(one_thread),
    }
    for fn in sides.values():
        fn()  # warm-up (tracing, caches, the iterator's first batches)
    seconds = {name: [] for name in sides}
    for _ in range(FLAGS.repeats):
        for name, fn in sides.items():
            seconds[name].append(fn())
    rate = {name: megabytes / statistics.median(seconds[name]) for name in sides}
    ratio = {
        name: statistics.median(r / s for r, s in zip(seconds["HF"], seconds[name]))
        for name in ("tokenize", "offsets", "tf.data", "tf.data 1 call")
    }
    same_ids, same_offsets = udhr_text.same_as_reference(ours, reference, original, FLAGS.batch_size)
    return (
        f"| {label} | {script} | {megabytes:.2f} | "
        + " | ".join(f"{rate[name]:.1f}" for name in sides)
        + f" | {ratio['tokenize']:.1f} | {ratio['offsets']:.1f} | {ratio['tf.data']:.1f} | {ratio['tf.data 1 call']:.1f} | "
        f"{same_ids}/{len(original)} | {same_offsets}/{len(original)} |"
    )


def _bpe_table(batches, texts, megabytes):
    """Byte-level BPE: bert_tf vs Hugging Face (the reference) vs keras-hub, and their agreement with it."""
    import tensorflow as tf
    import tokenizers

    from bert_tf.text import BytePairTokenizer

    size = FLAGS.batch_size
    ours = BytePairTokenizer(FLAGS.bpe_vocab, FLAGS.bpe_merges)
    tokenize = tf.function(ours.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    with_offsets = tf.function(ours.tokenize_with_offsets, input_signature=[tf.TensorSpec([None], tf.string)])
    # The reference as transformers' RobertaTokenizer builds it from the two files.
    reference = tokenizers.ByteLevelBPETokenizer(FLAGS.bpe_vocab, FLAGS.bpe_merges)
    reference.add_special_tokens(
        [
            tokenizers.AddedToken(t, lstrip=t == "<mask>", normalized=False, special=True)
            for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")
            if ours.token_to_id(t) is not None
        ]
    )
    text_batches = [texts[i : i + size] for i in range(0, len(texts), size)]
    # name: (timed run, ids of a batch index for the agreement column)
    sides = {
        "bert_tf BytePairTokenizer.tokenize (tf.function)": (
            lambda: [tokenize(b).flat_values.numpy() for b in batches],
            lambda i: tokenize(batches[i]).to_list(),
        ),
        "bert_tf BytePairTokenizer.tokenize_with_offsets": (
            lambda: [with_offsets(b)[0].flat_values.numpy() for b in batches],
            lambda i: with_offsets(batches[i])[0].to_list(),
        ),
        "HF tokenizers ByteLevelBPETokenizer.encode_batch": (
            lambda: [reference.encode_batch(b, add_special_tokens=False) for b in text_batches],
            lambda i: [e.ids for e in reference.encode_batch(text_batches[i], add_special_tokens=False)],
        ),
    }
    try:
        import keras_hub

        hub = keras_hub.tokenizers.BytePairTokenizer(vocabulary=FLAGS.bpe_vocab, merges=FLAGS.bpe_merges)
        hub_fn = tf.function(hub.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
        sides["keras_hub BytePairTokenizer (tf.function)"] = (
            lambda: [hub_fn(b).flat_values.numpy() for b in batches],
            lambda i: hub_fn(batches[i]).to_list(),
        )
    except ImportError:
        print("keras-hub is not installed: skipped")
    reference_name = "HF tokenizers ByteLevelBPETokenizer.encode_batch"
    title = f"Byte-level BPE ({ours.vocab_size} ids): {len(texts)} lines, {megabytes:.1f} MB, batch_size={size}"
    _sides_table(sides, reference_name, len(batches), megabytes, title)


def _sentencepiece_table(batches, texts, megabytes):
    """SentencePiece unigram: bert_tf vs Hugging Face (the reference) vs the sentencepiece library."""
    import os

    import sentencepiece
    import tensorflow as tf
    import tokenizers

    from bert_tf.text import SentencePieceTokenizer

    size = FLAGS.batch_size
    path = os.path.join(FLAGS.sentencepiece, "tokenizer.json")
    ours = SentencePieceTokenizer.from_tokenizer_json(path)
    tokenize = tf.function(ours.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])
    with_offsets = tf.function(ours.tokenize_with_offsets, input_signature=[tf.TensorSpec([None], tf.string)])
    reference = tokenizers.Tokenizer.from_file(path)
    models = [
        n
        for n in ("spiece.model", "spm.model", "sentencepiece.bpe.model")
        if os.path.exists(os.path.join(FLAGS.sentencepiece, n))
    ]
    text_batches = [texts[i : i + size] for i in range(0, len(texts), size)]
    reference_name = "HF tokenizers Tokenizer(tokenizer.json).encode_batch"
    sides = {
        "bert_tf SentencePieceTokenizer.tokenize (tf.function)": (
            lambda: [tokenize(b).flat_values.numpy() for b in batches],
            lambda i: tokenize(batches[i]).to_list(),
        ),
        "bert_tf SentencePieceTokenizer.tokenize_with_offsets": (
            lambda: [with_offsets(b)[0].flat_values.numpy() for b in batches],
            lambda i: with_offsets(batches[i])[0].to_list(),
        ),
        reference_name: (
            lambda: [reference.encode_batch(b, add_special_tokens=False) for b in text_batches],
            lambda i: [e.ids for e in reference.encode_batch(text_batches[i], add_special_tokens=False)],
        ),
    }
    if models:
        processor = sentencepiece.SentencePieceProcessor(model_file=os.path.join(FLAGS.sentencepiece, models[0]))
        sides[f"sentencepiece SentencePieceProcessor.encode ({models[0]})"] = (
            lambda: [processor.encode(b) for b in text_batches],
            lambda i: processor.encode(text_batches[i]),
        )
    title = (
        f"SentencePiece unigram ({ours.family}, {ours.vocab_size} pieces): {len(texts)} lines, {megabytes:.1f} MB, "
        f"batch_size={size}"
    )
    _sides_table(sides, reference_name, len(batches), megabytes, title)


def main(argv):
    del argv
    import tensorflow as tf

    paths = sorted(glob.glob(FLAGS.input))
    if not paths:
        raise app.UsageError(f"--input matches no file. Received: {FLAGS.input}")
    if FLAGS.batch_size < 1:
        raise app.UsageError(f"--batch_size must be positive. Received: {FLAGS.batch_size}")
    if FLAGS.repeats < 1:
        raise app.UsageError(f"--repeats must be positive. Received: {FLAGS.repeats}")
    if FLAGS.min_seconds < 0:
        raise app.UsageError(f"--min_seconds must not be negative. Received: {FLAGS.min_seconds}")
    if bool(FLAGS.bpe_vocab) != bool(FLAGS.bpe_merges):
        raise app.UsageError("--bpe_vocab and --bpe_merges go together.")
    if not FLAGS.vocab and not FLAGS.bpe_vocab and not FLAGS.sentencepiece:
        raise app.UsageError(
            "Nothing to time: set --vocab (WordPiece), --bpe_vocab with --bpe_merges, and/or --sentencepiece."
        )
    if FLAGS.multilingual and not (FLAGS.vocab or FLAGS.sentencepiece):
        raise app.UsageError(
            "--multilingual needs --vocab (a BertTokenizer table) and/or --sentencepiece (a SentencePieceTokenizer one)."
        )
    if FLAGS.multilingual_megabytes <= 0:
        raise app.UsageError(f"--multilingual_megabytes must be positive. Received: {FLAGS.multilingual_megabytes}")
    if FLAGS.pipeline_corpus and not FLAGS.vocab:
        raise app.UsageError("--pipeline_corpus needs --vocab (the pipeline row uses BertTokenizer).")
    lines = []
    for path in paths:
        with open(path, "rb") as f:
            lines.extend(f.read().split(b"\n"))
    megabytes = sum(len(line) for line in lines) / 1e6
    texts = [line.decode("utf-8", errors="replace") for line in lines]
    size = FLAGS.batch_size
    batches = [tf.constant(lines[i : i + size]) for i in range(0, len(lines), size)]

    print(cpu_line())
    if FLAGS.vocab:
        ours = _wordpiece_table(batches, texts, megabytes)
    if FLAGS.multilingual and FLAGS.vocab:
        _multilingual_table("wordpiece")
    if FLAGS.multilingual and FLAGS.sentencepiece:
        _multilingual_table("sentencepiece")
    if FLAGS.bpe_vocab:
        _bpe_table(batches, texts, megabytes)
    if FLAGS.sentencepiece:
        _sentencepiece_table(batches, texts, megabytes)

    if FLAGS.pipeline_corpus:
        rate = _pipeline_examples_per_second(ours)
        print(f"\n| pretraining_dataset (seq 128, batch 32, paragraphs) on {FLAGS.pipeline_corpus} | examples/s |")
        print("|---|---:|")
        print(f"| bert_tf BertTokenizer | {rate:.0f} |")


if __name__ == "__main__":
    app.run(main)
