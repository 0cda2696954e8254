"""Hugging Face Hub ids as model references: `org/name[@revision]` resolved to a snapshot in huggingface_hub's cache.

    resolve_model_path("runs/my_model")                            # an existing path: returned as it is
    resolve_model_path("sentence-transformers/all-MiniLM-L6-v2")  # .../hub/models--sentence-transformers--.../snapshots/<commit>
    resolve_model_path("google-bert/bert-base-uncased@v1.0")      # a branch, tag or commit hash after "@"
    resolve_model_path("bert-base-uncased")                        # a legacy id without an organisation

Everything that takes a checkpoint directory takes an id, through `ModelDirectory.read`, which calls
`resolve_model_path` first. An existing local path always wins (a folder `org/name` under the working directory is
read, not the Hub's `org/name`). An id is fetched with `huggingface_hub.snapshot_download` into its usual cache
(`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`), only the files bert_tf reads
(`ALLOW_PATTERNS`: configs, safetensors weights, tokenizer files, SentencePiece models, a sentence-transformers
folder's module configs, TF checkpoints; never pickles, ONNX or other frameworks' weights: `IGNORE_PATTERNS`).
With `HF_HUB_OFFLINE=1`, or when the Hub cannot be reached, the cache alone answers (`local_files_only=True`); an id
it does not hold is one `CheckpointError` line naming the id and the command that fetches it.
"""

import os

from bert_tf.checkpoints.readers import CheckpointError

# The files bert_tf reads from a model repository (fnmatch patterns, `*` crossing "/"; huggingface_hub's
# `allow_patterns`): every JSON config (config.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json,
# modules.json, sentence_bert_config.json, 1_Pooling/config.json, model.safetensors.index.json, bert_tf.json ...),
# safetensors weights (sharded too, and an ELECTRA discriminator's generator/ folder), vocabularies, BPE merges,
# SentencePiece models and TF checkpoints (bert_model.ckpt.*, model.ckpt-N.*).
ALLOW_PATTERNS = (
    "*.json",
    "*.safetensors",
    "*vocab.txt",
    "*vocab.json",
    "*merges.txt",
    "*.model",
    "*.ckpt.index",
    "*.ckpt.data-*",
    "*.ckpt-*.index",
    "*.ckpt-*.data-*",
    "checkpoint",
    "*/checkpoint",
)
# Never fetched, whatever ALLOW_PATTERNS lets through: pickles and other frameworks' and runtimes' copies.
IGNORE_PATTERNS = (
    "*.bin",
    "*.pt",
    "*.pth",
    "*.pkl",
    "*.pickle",
    "*.h5",
    "*.msgpack",
    "*.ot",
    "*.onnx",
    "*.onnx_data",
    "onnx/*",
    "openvino/*",
    "coreml/*",
    "*.mlmodel",
    "*.tflite",
)
HUB_REF_PATTERN = "org/name[@revision]"

_TRUE = {"1", "on", "yes", "true"}


def parse_hub_id(ref):
    """`(repo_id, revision or None)` when `ref` is written as a Hugging Face Hub model id (`org/name`, a legacy
    `name`, optionally `@revision`), else None. Says nothing of whether the Hub or the cache has it."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    ref = os.fspath(ref)
    repo_id, at, revision = ref.partition("@")
    if at and not revision:
        return None
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        return None
    return repo_id, revision or None


def is_local(ref):
    """Whether `ref` names something on this machine: a file or directory, or a TF1 checkpoint prefix."""
    ref = os.fspath(ref)
    return os.path.exists(ref) or os.path.exists(ref + ".index")


def hub_offline():
    """Whether huggingface_hub is told to stay offline: `HF_HUB_OFFLINE` (else transformers' `TRANSFORMERS_OFFLINE`)
    is 1, on, yes or true, as huggingface_hub reads it, but read now, so a change after its import counts."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().lower() in _TRUE


def hub_cache_dir():
    """huggingface_hub's model cache, from the environment as it is now: `HF_HUB_CACHE`, `HUGGINGFACE_HUB_CACHE`,
    `HF_HOME/hub`, else huggingface_hub's default (`~/.cache/huggingface/hub`)."""
    from huggingface_hub import constants

    def expand(path):
        return os.path.expandvars(os.path.expanduser(path))

    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return expand(os.environ[name])
    if os.environ.get("HF_HOME"):
        return os.path.join(expand(os.environ["HF_HOME"]), "hub")
    return constants.HF_HUB_CACHE


def fetch_command(repo_id, revision=None):
    """The command that puts `repo_id` (at `revision`) in the cache: huggingface_hub's CLI."""
    return f"hf download {repo_id}" + (f" --revision {revision}" if revision else "")


def resolve_model_path(ref):
    """The local path of the model reference `ref`: `ref` itself when it exists on this machine or is not written
    as a Hub id (`parse_hub_id`; `detect_format` then says what is missing), else the snapshot directory of the
    Hub id in huggingface_hub's cache, fetched first unless offline.

    Raises:
        CheckpointError: (one line, naming `ref`) an id that is neither a local path nor in the cache while offline
            or without a network, one the Hub does not have, or a revision it does not have.
    """
    ref = os.fspath(ref)
    if is_local(ref):
        return ref
    parsed = parse_hub_id(ref)
    if parsed is None:
        return ref
    repo_id, revision = parsed
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    cache = hub_cache_dir()
    offline = hub_offline()

    def download(local_files_only):
        return snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=cache,
            allow_patterns=list(ALLOW_PATTERNS),
            ignore_patterns=list(IGNORE_PATTERNS),
            local_files_only=local_files_only,
        )

    fetch = fetch_command(repo_id, revision)
    looked = f"Checkpoint path does not exist: {ref}"
    try:
        try:
            return download(local_files_only=offline)
        except (RepositoryNotFoundError, RevisionNotFoundError, LocalEntryNotFoundError):
            raise
        except Exception as e:  # the network failing (httpx's connection and timeout errors), or anything else
            if offline or not _is_connection_error(e):
                raise
            return download(local_files_only=True)  # the Hub cannot be reached: what the cache holds
    except RevisionNotFoundError:
        raise CheckpointError(
            f"{looked}, and the Hugging Face Hub model {repo_id} has no revision {revision!r} "
            f"(a branch, tag or commit hash after '@'). Received: {ref}"
        ) from None
    except RepositoryNotFoundError:
        raise CheckpointError(
            f"{looked}, nor is it a model on the Hugging Face Hub ({repo_id}: repository not found, or private or "
            "gated without a token: `hf auth login`). Give a checkpoint directory or an id written "
            f"{HUB_REF_PATTERN}."
        ) from None
    except LocalEntryNotFoundError as e:
        why = "offline: HF_HUB_OFFLINE=1" if offline else "the Hugging Face Hub could not be reached"
        held = "holds an incomplete copy of it" if isinstance(e, IncompleteSnapshotError) else "does not hold it"
        raise CheckpointError(
            f"{looked}, and as a Hugging Face Hub id: the cache {cache} {held} ({why}). Fetch it with `{fetch}` "
            "(`huggingface-cli download` before huggingface_hub 1.0), or give a checkpoint directory."
        ) from None
    except HfHubHTTPError as e:  # the Hub answered with an error (a server error, a refused request)
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(
            f"{looked}, and fetching it from the Hugging Face Hub failed ({reason}). Try again, or fetch it with "
            f"`{fetch}`, or give a checkpoint directory."
        ) from None


def _is_connection_error(error):
    """Whether `error` is the network failing (as opposed to a bad id or a full disk)."""
    for module in ("httpx2", "httpx"):  # huggingface_hub's HTTP client, by version
        try:
            client = __import__(module)
        except ImportError:
            continue
        if isinstance(error, client.TransportError):
            return True
    return isinstance(error, (ConnectionError, TimeoutError))
