"""One distributed training loop for every strategy, with exact resume.

Keras 3's `fit` does not run under MultiWorkerMirroredStrategy
(keras-team/keras#20585); a loop of `strategy.run` inside `tf.function`
does, so the apps use this loop for every strategy. The models stay plain
Keras models.

Data: each worker reads its own host `tf.data` iterator (a plain, checkpointable
iterator) yielding its share of the global batch; inside the compiled loop the
batch is split between the worker's replicas. Gradient accumulation splits
each replica's share into `grad_accum_steps` micro-batches. Losses are
normalized by the global number of predictions, so any strategy, replica count
or accumulation gives the same update as one device on the whole batch.

Checkpoints hold weights, optimizer slots and step (and the loss scale under
float16) plus each worker's data-iterator position; see `resume`.
"""

import dataclasses
import glob
import json
import logging
import math
import os
import re
import shutil
import signal
import socket
import sys
import threading
import time

import keras
import tensorflow as tf
from google.protobuf import text_format

from bert_tf.checkpoints.readers import glob_characters_error
from bert_tf.layers import choose_path, resolve_jit_compile
from bert_tf.objectives import Head, Objective
from bert_tf.training.distribute import is_chief, worker_index

# The run's settings in model_dir, checked on resume (the model directory's own settings file is
# `bert_tf.checkpoints.SETTINGS_FILE`, bert_tf.json).
TRAINING_SETTINGS_FILE = "training_settings.json"
# Pretraining settings whose change makes an existing checkpoint unusable (the model, its inputs, the batch) or
# changes the run's objective or data (the recipe: sentence objective, packing, masking and its distribution, how
# special tokens in the text are read, the shuffle buffer the saved iterator holds; the token-level objective,
# and replaced-token detection's lambda and generator); a resume with any of them
# changed is refused, naming the differences (pretraining accepts a ModernBERT run's long-context phase before the
# loop compares them: `bert_tf.training.pretraining.resume_changes`).
INCOMPATIBLE = (
    "model",
    "vocab_sha256",
    "max_seq_length",
    "max_predictions_per_seq",
    "global_batch_size",
    "sentence_objective",
    "packing",
    "masking",
    "masking_rate",
    "span_geometric_p",
    "max_span_length",
    "split_special_tokens",
    "shuffle_buffer",
    "objective",
    "discriminator_weight",
    "generator",
)


# After this many seconds without the first call's result, the loop says why it is slow.
FIRST_CALL_NOTICE_SECONDS = 30


class ResumeError(RuntimeError):
    """An existing run in model_dir cannot be continued as asked; says why."""


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; names the step."""


class WorkerLostError(RuntimeError):
    """Under several workers: another worker ended or stopped responding, so this one stops too.

    The message names the lost worker (when TensorFlow's error does), the checkpoints kept, and that re-running
    the same command on every worker continues from the newest. Its `__cause__` is TensorFlow's error.
    """


# TensorFlow's errors when a collective's peer is gone: a killed process resets its connections (Unavailable),
# one that stops sending heartbeats to the coordination service is reported unhealthy after its heartbeat timeout
# (Unavailable, DeadlineExceeded), and the collectives in flight are aborted (Cancelled, Aborted, Internal).
_LOST_PEER_ERRORS = (
    tf.errors.UnavailableError,
    tf.errors.DeadlineExceededError,
    tf.errors.CancelledError,
    tf.errors.AbortedError,
    tf.errors.InternalError,
)
# Only errors that say so are a lost worker: TensorFlow aborts every collective of the process with this message.
_ABORTED_COLLECTIVES = "Collective ops is aborted by: "
_TASK = re.compile(r"/job:(\w+)(?:/replica:\d+)?/task:(\d+)")


# Signals that stop training cleanly: a checkpoint at the current step, then `TrainingInterrupted`.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class TrainingInterrupted(RuntimeError):
    """SIGTERM or SIGINT stopped training after a checkpoint at the current step; re-running continues.

    Attributes:
        signum: the signal received.
        step: the step saved.
        exit_code: 128 + signum, the shell's code for the signal (143 for SIGTERM, 130 for SIGINT).
    """

    def __init__(self, message, signum, step):
        super().__init__(message)
        self.signum, self.step, self.exit_code = signum, step, 128 + signum


class _StopSignals:
    """While entered (in the main thread only; elsewhere it does nothing): the first SIGTERM or SIGINT is kept
    in `received` for the loop to act on between compiled calls; a second one ends the process at once.

    Python runs a signal handler only between bytecodes, i.e. once the compiled call in progress returns. The
    wakeup fd is written by the C-level handler as each signal arrives, so a watcher thread sees a second signal
    at once even while TensorFlow computes. The previous handlers and wakeup fd are restored on exit.
    """

    def __init__(self):
        self.received = None
        self._previous = {}
        self._sockets = None

    def __enter__(self):
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in STOP_SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        reader, writer = socket.socketpair()
        writer.setblocking(False)
        self._sockets = (reader, writer)
        self._previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        threading.Thread(target=self._watch, args=(reader,), name="bert_tf-stop-signals", daemon=True).start()
        return self

    def __exit__(self, *exc_info):
        if self._sockets is None:
            return
        signal.set_wakeup_fd(self._previous_fd)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._sockets[1].close()  # the watcher's recv returns b"" and it ends
        self._sockets = None

    def _handle(self, signum, frame):
        if self.received is None:
            self.received = signum
        else:  # normally the watcher has ended the process already
            _abort(signum)

    @staticmethod
    def _watch(reader):
        seen = 0
        with reader:
            while True:
                try:
                    data = reader.recv(64)
                except OSError:
                    return
                if not data:
                    return
                for signum in data:
                    if signum in STOP_SIGNALS:
                        seen += 1
                        if seen > 1:
                            _abort(signum)


def _first_call_notice(log):
    """A started timer that logs why the first compiled call is slow, unless cancelled within FIRST_CALL_NOTICE_SECONDS."""
    notice = threading.Timer(
        FIRST_CALL_NOTICE_SECONDS,
        log,
        args=(
            f"The first steps are taking over {FIRST_CALL_NOTICE_SECONDS} s: the input pipeline is filling its "
            "buffers (tokenizing and shuffling) and the step is being compiled; this happens once per run.",
        ),
    )
    notice.daemon = True
    notice.start()
    return notice


def _abort(signum):
    name = signal.Signals(signum).name
    os.write(2, f"Received a second {name}: stopping at once; the newest checkpoint is kept.\n".encode())
    os._exit(128 + signum)


@dataclasses.dataclass
class LoopConfig:
    """The training loop's schedule: steps, compiled loops, checkpoints, evaluations, clipping and retries."""

    train_steps: int
    steps_per_loop: int = 100  # steps per tf.function call, between host logging
    checkpoint_steps: int = 1000
    keep_checkpoints: int = 3
    eval_steps: int = 0  # batches per evaluation; 0 disables evaluation
    eval_interval: int = 1000  # steps between evaluations
    grad_accum_steps: int = 1
    clip_norm: float = 1.0  # global-norm clip of the whole step's gradient; 0 disables it
    jit_compile: bool = None  # None: this machine's training path (`bert_tf.layers.execution_path`)
    nonfinite_retries: int = 0  # restore the last checkpoint and skip the batch this many times
    # Seconds between progress updates: a compiled call runs fewer than `steps_per_loop` steps when steps are slow
    # (the steps, their batches and the logged metrics are the same; only where the loop looks up changes); 0: off.
    progress_seconds: float = 15.0
    # A checkpoint of the initial weights at step 0 of a new run (a good checkpoint before the first interval).
    initial_checkpoint: bool = True


def step_of(prefix):
    """The step of a checkpoint prefix (`.../ckpt-40` -> 40)."""
    return int(prefix.rsplit("-", 1)[1])


def checkpoints_in(directory):
    """The `ckpt-N` prefixes in `directory` that have an index file, oldest first (by N)."""
    if not os.path.isdir(directory):
        return []
    numbers = []
    for name in os.listdir(directory):
        stem = name[: -len(".index")] if name.endswith(".index") else ""
        if stem.startswith("ckpt-") and stem[len("ckpt-") :].isdigit():
            numbers.append(int(stem[len("ckpt-") :]))
    return [os.path.join(directory, f"ckpt-{n}") for n in sorted(numbers)]


def _write_checkpoint_state(directory, prefixes):
    """Writes `directory/checkpoint` listing `prefixes` (newest last) as `tf.train.CheckpointManager` would.

    Each is stamped with its index file's time and none is "preserved", so the manager deletes the oldest
    beyond `max_to_keep` as if it had saved them itself.
    """
    stamps = [os.path.getmtime(p + ".index") for p in prefixes]
    state = tf.compat.v1.train.generate_checkpoint_state_proto(
        directory,
        prefixes[-1],
        all_model_checkpoint_paths=prefixes,
        all_model_checkpoint_timestamps=stamps,
        last_preserved_timestamp=min(stamps) - 1.0,
    )
    temporary = os.path.join(directory, "checkpoint.tmp-state")
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text_format.MessageToString(state))
    os.replace(temporary, os.path.join(directory, "checkpoint"))


class _Progress(keras.utils.Progbar):
    """A `keras.utils.Progbar` whose time per step counts only the steps this run has taken, after its first
    compiled call: Keras' own divides the time since the bar started by the whole step count, so after a resume
    from step N it showed the N resumed steps as if they had just been taken."""

    def __init__(self, target, initial, **kwargs):
        # interval=0: every update is drawn (one per compiled call); Keras' 0.05 s dropped those of fast calls, so
        # the bar showed step 1 when evaluation at step 6 began.
        super().__init__(target, interval=0, **kwargs)
        self._initial, self._mark = initial, None

    def _estimate_step_duration(self, current, now):
        if current <= self._initial:
            return 0
        if self._mark is None:  # the end of the first call (tracing, compiling, filling the input buffers)
            self._mark = (current, now)
            return (now - self._start) / (current - self._initial)
        if current > self._mark[0]:
            return (now - self._mark[1]) / (current - self._mark[0])
        return (now - self._start) / (current - self._initial)

    @property
    def line_open(self):
        """True while the bar's line on the console is not ended (the next message must start a new line)."""
        return bool(self.verbose == 1 and self._dynamic_display and self._prev_total_width and not self._finalized)

    _finalized = False

    def update(self, current, values=None, finalize=None):
        super().update(current, values, finalize)
        self._finalized = self.target is not None and current >= self.target


def newest_step(model_dir):
    """The step of the newest checkpoint listed in `model_dir/checkpoints/checkpoint`, or None.

    Reads only that small state file (and checks the checkpoint's index file exists): no model, data or
    TensorFlow runtime is needed, so a finished run can be recognized at once.
    """
    directory = os.path.join(model_dir, "checkpoints")
    try:
        state = tf.train.get_checkpoint_state(directory)
    except Exception:  # noqa: BLE001 (a damaged state file: the loop's resume names it)
        return None
    if state is None or not state.model_checkpoint_path:
        return None
    name = os.path.basename(state.model_checkpoint_path)
    number = name[len("ckpt-") :] if name.startswith("ckpt-") else ""
    if not number.isdigit() or not os.path.exists(os.path.join(directory, name + ".index")):
        return None
    return int(number)


def read_training_settings(model_dir):
    """The dict in `model_dir/TRAINING_SETTINGS_FILE`, or None when it is missing or not a readable JSON object."""
    try:
        with open(os.path.join(model_dir, TRAINING_SETTINGS_FILE), encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError):
        return None
    return saved if isinstance(saved, dict) else None


class TrainingLoop:
    """Trains a model on an `Objective` with `strategy`; see the module docstring.

    Args:
        strategy: a `tf.distribute.Strategy`; model and optimizer must have been
            created inside `strategy.scope()`.
        model: a Keras model with dict outputs (`BertPretrainer` or a task model).
        optimizer: a Keras optimizer (a `LossScaleOptimizer` for float16)
            without clipping of its own: the loop clips (`LoopConfig.clip_norm`).
        train_dataset_fn: function of a `tf.distribute.InputContext` returning
            this worker's `(features, labels, sample_weights)` dataset with
            per-worker batch size.
        eval_dataset_fn: same for the held-out data, or None; it may return None (no held-out
            evaluation, e.g. a corpus too small to hold data out).
        model_dir: checkpoints (`model_dir/checkpoints`) and TensorBoard logs
            (`model_dir/logs`) go here.
        settings: dict written to `TRAINING_SETTINGS_FILE`; a resume with a
            different value of any `incompatible` key is refused.
        objective: the loss (default: masked LM + the model's sentence output, `Objective.for_pretrainer`).
        incompatible: settings keys that must match to resume.
        evaluate_fn: optional function of the loop returning a dict of metrics,
            called every `eval_interval` steps and at the end instead of the
            held-out loss evaluation (fine-tuning computes its task metrics here).
        upgrade_settings: optional function of the saved settings dict returning
            it with the keys an older version did not record filled in as that
            version behaved, before the `incompatible` keys are compared.
        fresh_data_through: a step, or None: a checkpoint of this step or an
            earlier one is restored without its data position, the data starting
            over from its beginning (the input pipeline changed after it, as in
            pretraining's long-context phase, so the saved position does not fit).
        data_position: "iterator": each checkpoint saves this worker's iterator
            (`data-worker{i}-{step}` files) and a resume restores it; "step": the
            data position is the step alone: `train_dataset_fn(context, step)` is
            called after `resume` with the batches trained since the data last
            started (the step, less `fresh_data_through`), and must return the
            data from there (for an iterator that cannot be saved, as
            one reading from tf.data service; `bert_tf.data.service`).
    """

    def __init__(
        self,
        strategy,
        model,
        optimizer,
        train_dataset_fn,
        global_batch_size,
        model_dir,
        config,
        eval_dataset_fn=None,
        settings=None,
        objective=None,
        incompatible=INCOMPATIBLE,
        evaluate_fn=None,
        upgrade_settings=None,
        fresh_data_through=None,
        data_position="iterator",
    ):
        message = glob_characters_error(model_dir)
        if message:
            raise ValueError(message + ".")
        self.strategy = strategy
        self.objective = objective or Objective.for_pretrainer(model)
        self.incompatible = tuple(incompatible)
        self.upgrade_settings = upgrade_settings
        self.fresh_data_through = fresh_data_through
        self.evaluate_fn = evaluate_fn
        self.model = model
        self.optimizer = optimizer
        self.config = config
        self.model_dir = model_dir
        self.global_batch_size = global_batch_size
        self.settings = dict(settings or {})
        self.chief = is_chief(strategy)
        replicas = strategy.num_replicas_in_sync
        if global_batch_size % (replicas * config.grad_accum_steps):
            raise ValueError(
                f"global_batch_size ({global_batch_size}) must be divisible by replicas ({replicas}) x "
                f"grad_accum_steps ({config.grad_accum_steps}). Received: global_batch_size={global_batch_size}"
            )
        self.local_replicas = len(strategy.extended.worker_devices)
        self.workers = workers = max(replicas // self.local_replicas, 1)
        context = tf.distribute.InputContext(
            num_input_pipelines=workers, input_pipeline_id=worker_index(strategy), num_replicas_in_sync=replicas
        )
        self.worker_batch = global_batch_size // workers
        if data_position not in ("iterator", "step"):
            raise ValueError(f"`data_position` must be 'iterator' or 'step'. Received: {data_position!r}")
        # "step": built in `_train` once `resume` has said where the data starts.
        self._start_data = (lambda step: iter(train_dataset_fn(context, step))) if data_position == "step" else None
        self.train_iterator = iter(train_dataset_fn(context)) if self._start_data is None else None
        self.eval_dataset = eval_dataset_fn(context) if eval_dataset_fn else None
        if not optimizer.built:
            with strategy.scope():  # slots are created here, not inside the compiled loop
                optimizer.build(model.trainable_variables)
        # Dropout draws from per-layer seed states that tf.train.Checkpoint does not reach through the model:
        # saving them is what makes a resumed run draw the same dropout masks as an uninterrupted one.
        seed_states = [
            generator.state
            for layer in model._flatten_layers(include_self=True, recursive=True)
            for generator in getattr(layer, "_seed_generators", [])
        ]
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, dropout_seeds=seed_states)
        self.data_checkpoint = (
            tf.train.Checkpoint(iterator=self.train_iterator) if self.train_iterator is not None else None
        )
        jit_compile = resolve_jit_compile(config.jit_compile, training=True)
        if config.jit_compile is None:
            logging.info("Training step path: %s (%s).", "xla" if jit_compile else "ops", choose_path().describe())
        self._compiled_micro_step = tf.function(self._micro_step, jit_compile=True) if jit_compile else self._micro_step
        self._train_loop = tf.function(self._loop, reduce_retracing=True)
        self._eval_batch = tf.function(self._evaluate_batch)
        self._saved_step = None
        # Several workers must stop at the same step (each call's boundary sums every worker's signal flags) and
        # resume from the same one (`resume` sums the steps each restored).
        self._sum_over_workers = tf.function(self._sum_over_replicas) if workers > 1 else None

    def _sum_over_replicas(self, values):
        per_replica = self.strategy.run(tf.identity, args=(values,))
        return self.strategy.reduce("sum", per_replica, axis=None)

    # === Steps ===

    def _replica_share(self, batch):
        """This replica's slice of the worker's batch."""

        def value_fn(context):
            index = context.replica_id_in_sync_group % self.local_replicas
            size = self.worker_batch // self.local_replicas
            return tf.nest.map_structure(lambda t: t[index * size : (index + 1) * size], batch)

        return self.strategy.experimental_distribute_values_from_function(value_fn)

    @tf.autograph.experimental.do_not_convert  # the model's step: no Python control flow on tensors
    def _micro_step(self, part, global_totals):
        """Gradients and statistics of one micro-batch (XLA-compiled with `jit_compile`)."""
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(part[0], training=True)
            loss, stats = self.objective.losses(outputs, part[1], part[2], global_totals)
            scaled = self.optimizer.scale_loss(loss) if hasattr(self.optimizer, "scale_loss") else loss
        grads = tape.gradient(scaled, variables)
        grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables)]  # e.g. an unused pooler
        return grads, {k: tf.cast(stats[k], tf.float32) for k in self.objective.stat_names}

    @tf.autograph.experimental.do_not_convert  # the model's step: no Python control flow on tensors
    def _replica_step(self, batch):
        features, labels, weights = batch
        global_totals = self.objective.global_totals(weights)
        variables = self.model.trainable_variables
        micro = self.config.grad_accum_steps
        size = tf.shape(features["token_ids"])[0] // micro
        grads = [tf.zeros_like(v) for v in variables]
        totals = {k: tf.constant(0.0) for k in self.objective.stat_names}
        for i in range(micro):
            part = tf.nest.map_structure(lambda t, i=i: t[i * size : (i + 1) * size], (features, labels, weights))
            micro_grads, stats = self._compiled_micro_step(part, global_totals)
            grads = [g + d for g, d in zip(grads, micro_grads)]
            totals = {k: totals[k] + stats[k] for k in self.objective.stat_names}
        self.optimizer.apply_gradients(zip(self._clip(grads), variables))
        return totals

    def _clip(self, grads):
        """Clips the global gradient (all replicas, unscaled) to `clip_norm`.

        Keras optimizers clip each replica's partial gradient before summing,
        which is not the global norm; so the loop sums first, clips, and hands
        the optimizer 1/replicas of the result to sum again.
        """
        if not self.config.clip_norm:
            return grads
        context = tf.distribute.get_replica_context()
        grads = context.all_reduce("sum", grads)
        limit = self.config.clip_norm
        if hasattr(self.optimizer, "dynamic_scale"):  # float16: gradients are still scaled
            limit = limit * self.optimizer.dynamic_scale
        grads, _ = tf.clip_by_global_norm(grads, limit)
        return [g / self.strategy.num_replicas_in_sync for g in grads]

    def _loop(self, iterator, steps):
        names = self.objective.stat_names
        totals = {k: tf.constant(0.0) for k in names}
        for _ in tf.range(steps):
            stats = self.strategy.run(self._replica_step, args=(self._replica_share(next(iterator)),))
            totals = {k: totals[k] + self.strategy.reduce("sum", stats[k], axis=None) for k in names}
        return totals

    @tf.autograph.experimental.do_not_convert  # the model's step: no Python control flow on tensors
    def _evaluate_batch(self, batch):
        def step(part):
            features, labels, weights = part
            totals = self.objective.global_totals(weights)
            stats = self.objective.losses(self.model(features, training=False), labels, weights, totals)[1]
            return {k: tf.cast(stats[k], tf.float32) for k in self.objective.stat_names}

        stats = self.strategy.run(step, args=(self._replica_share(batch),))
        return {k: self.strategy.reduce("sum", stats[k], axis=None) for k in self.objective.stat_names}

    # === Checkpoints ===

    @property
    def step(self):
        return int(self.optimizer.iterations.numpy())

    def _checkpoint_dir(self):
        if self.chief:
            return os.path.join(self.model_dir, "checkpoints")
        # Other workers take part in the collective save but keep nothing.
        return os.path.join(self.model_dir, f".worker_{worker_index(self.strategy)}_tmp")

    def _data_prefix(self, step):
        return os.path.join(self.model_dir, "checkpoints", f"data-worker{worker_index(self.strategy)}-{step}")

    def save(self):
        step = self.step
        directory = self._checkpoint_dir()
        manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=self.config.keep_checkpoints, step_counter=self.optimizer.iterations
        )
        os.makedirs(os.path.join(self.model_dir, "checkpoints"), exist_ok=True)
        if self.data_checkpoint is not None:
            self.data_checkpoint.write(self._data_prefix(step))
        manager.save(checkpoint_number=step)
        self._saved_step = step
        if not self.chief:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            kept = {step_of(p) for p in manager.checkpoints}
            for index in glob.glob(self._data_prefix("*") + ".index"):
                number = step_of(index[: -len(".index")])
                if number not in kept:
                    for path in glob.glob(index[: -len(".index")] + ".*"):
                        os.remove(path)

    def resume(self):
        """Restores the newest usable checkpoint; returns its step (0 for a new run).

        Refuses incompatible settings (ResumeError listing the differences),
        falls back from a corrupt newest checkpoint to the previous one, errors
        on a garbage checkpoint-state file, and removes leftover temporary files.
        Several workers resume from the same step: the newest that every worker
        can read (a worker killed while saving may lack its data position of the
        newest checkpoint).
        """
        directory = os.path.join(self.model_dir, "checkpoints")
        self._check_settings()
        for leftover in glob.glob(os.path.join(directory, "*.tmp*")) + glob.glob(
            os.path.join(self.model_dir, ".worker_*_tmp")
        ):
            shutil.rmtree(leftover, ignore_errors=True) if os.path.isdir(leftover) else os.remove(leftover)
        state_file = os.path.join(directory, "checkpoint")
        if os.path.exists(state_file):
            try:
                state = tf.train.get_checkpoint_state(directory)
            except Exception as e:  # a text-proto parse error
                raise ResumeError(
                    f"{state_file} is not a valid checkpoint-state file ({type(e).__name__}: {e}); "
                    "fix or remove it. Refusing to restart from step 0."
                ) from None
            if state is None or not state.all_model_checkpoint_paths:
                raise ResumeError(
                    f"{state_file} lists no checkpoints; fix or remove it. Refusing to restart from step 0."
                )
            candidates = [os.path.join(directory, os.path.basename(p)) for p in state.all_model_checkpoint_paths]
            listed = True
        else:
            # No state file, but checkpoints: they were a run (the state file was lost or deleted). Resume from
            # them and write the state file again; starting at 0 would overwrite them.
            candidates = checkpoints_in(directory)
            listed = False
        self._check_data_positions(candidates)
        errors = []
        path = self._restore_newest(candidates, errors) if candidates else None
        if self.workers > 1:  # every worker calls this at the same point, with or without checkpoints
            path = self._restore_agreed(candidates, path, errors)
        if not candidates:
            return 0
        if path is None:
            raise ResumeError("No checkpoint in " + directory + " could be read:\n  " + "\n  ".join(errors))
        step = step_of(path)
        if not listed:
            kept = candidates[: candidates.index(path) + 1]
            logging.warning(
                "%s is missing but %s holds %s: resuming from %s and %s, and writing the state file again.",
                state_file,
                directory,
                ", ".join(os.path.basename(p) for p in candidates),
                path,
                self._data_prefix(step),
            )
            if self.chief:
                _write_checkpoint_state(directory, kept)
        self._saved_step = step
        return step

    def _check_data_positions(self, candidates):
        """ResumeError (one line) when this loop restores iterators but none of `candidates` (those after
        `fresh_data_through`) has one saved: a run whose data position is its step (`data_position="step"`,
        bert-tf-pretrain --data_service) resumes only that way."""
        fresh = -1 if self.fresh_data_through is None else self.fresh_data_through
        positioned = [step for step in map(step_of, candidates) if step > fresh]
        if self.data_checkpoint is None or not positioned:
            return
        if not any(os.path.exists(self._data_prefix(step) + ".index") for step in positioned):
            raise ResumeError(
                f"The checkpoints in {os.path.join(self.model_dir, 'checkpoints')} hold no input-pipeline position "
                "(written by a run whose data position is its step, as one reading from tf.data service): resume it "
                "the same way (bert-tf-pretrain --data_service=...). Refusing to restart the data from its beginning."
            )

    def _restore_newest(self, candidates, errors):
        """Restores the newest of `candidates` (checkpoint prefixes, oldest first) that reads; returns its prefix,
        or None with each one's error appended to `errors`."""
        for path in reversed(candidates):
            if self._restore(path, errors):
                return path
        return None

    def _restore(self, path, errors):
        """Restores the checkpoint `path` and this worker's data position of its step; False (and the error
        appended to `errors`) when either is unreadable."""
        step = step_of(path)
        try:
            self.checkpoint.read(path).assert_existing_objects_matched().expect_partial()
            if self.data_checkpoint is not None and (self.fresh_data_through is None or step > self.fresh_data_through):
                self.data_checkpoint.read(self._data_prefix(step)).assert_consumed()
        except Exception as e:  # noqa: BLE001 (any unreadable file: OpError, IndexError, ...)
            errors.append(f"{path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            logging.warning("Checkpoint %s is unreadable (%s); trying the previous one.", path, errors[-1])
            return False
        if self.step != step:
            raise ResumeError(f"{path} holds step {self.step}, not {step}.")
        return True

    def _restore_agreed(self, candidates, path, errors):
        """Under several workers: the checkpoint every worker resumes from, restored here (see `resume`).

        Each worker tells the others the step it restored (-1: none readable, -2: no checkpoint at all); all
        then take the oldest, and all raise a `ResumeError` when one has none.
        """
        step = -2 if not candidates else -1 if path is None else step_of(path)
        mine = tf.one_hot(worker_index(self.strategy), self.workers, on_value=step, off_value=0, dtype=tf.int64)
        steps = [int(s) // self.local_replicas for s in self._sum_over_workers(mine).numpy()]
        oldest = min(steps)
        directory = os.path.join(self.model_dir, "checkpoints")
        if oldest == -1:
            unreadable = ", ".join(str(i) for i, s in enumerate(steps) if s == -1)
            raise ResumeError(
                f"No checkpoint in {directory} could be read by worker {unreadable}"
                + (":\n  " + "\n  ".join(errors) if step == -1 else " (its output says why).")
            )
        if oldest == -2 and max(steps) != -2:
            found = ", ".join(f"worker {i}: " + ("none" if s == -2 else f"step {s}") for i, s in enumerate(steps))
            raise ResumeError(
                f"Only some workers find checkpoints in {directory} ({found}); is the model directory on a file "
                "system that every worker shares?"
            )
        if oldest in (-2, step):
            return path
        agreed = next((p for p in candidates if step_of(p) == oldest), None)
        logging.warning(
            "Worker %s restored step %d but another worker can only resume from step %d: every worker resumes "
            "from step %d.",
            worker_index(self.strategy),
            step,
            oldest,
            oldest,
        )
        failed = []
        if agreed is None or not self._restore(agreed, failed):
            raise ResumeError(
                f"Another worker can only resume from step {oldest}, which this worker cannot read: "
                + ("; ".join(failed) or f"no checkpoint of step {oldest} is listed")
            )
        return agreed

    def _check_settings(self):
        path = os.path.join(self.model_dir, TRAINING_SETTINGS_FILE)
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    saved = json.load(f)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ResumeError(
                    f"{path}: not valid JSON ({e}); it records the settings of the run in {self.model_dir}. "
                    "Restore it, or use a new model_dir; the checkpoints were left as they are."
                ) from None
            if not isinstance(saved, dict):
                raise ResumeError(
                    f"{path}: expected a JSON object of run settings. Received: {type(saved).__name__}; "
                    "the checkpoints were left as they are."
                )
            if self.upgrade_settings is not None:
                saved = self.upgrade_settings(saved)
            differences = [
                f"  {key}: checkpoint has {saved.get(key)!r}, this run has {self.settings.get(key)!r}"
                for key in self.incompatible
                if saved.get(key) != self.settings.get(key)
            ]
            if differences:
                raise ResumeError(
                    f"{self.model_dir} holds a run with incompatible settings; use a new --model_dir "
                    "or the old settings:\n" + "\n".join(differences)
                )
        elif self.chief:
            os.makedirs(self.model_dir, exist_ok=True)
            # Whole or not at all: the other workers of a new run may read it while it is being written.
            temporary = path + ".tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(self.settings, f, indent=2, sort_keys=True)
            os.replace(temporary, path)

    # === The loop ===

    def evaluate(self):
        """`evaluate_fn`'s metrics, else the objective's on `eval_steps` held-out batches."""
        if self.evaluate_fn is not None:
            return self.evaluate_fn(self)
        totals = {k: 0.0 for k in self.objective.stat_names}
        for batch in self.eval_dataset.take(self.config.eval_steps):
            for k, v in self._eval_batch(batch).items():
                totals[k] += float(v)
        return self.objective.summary(totals, max(self.config.eval_steps, 1))

    @property
    def _evaluates(self):
        return self.evaluate_fn is not None or (self.eval_dataset is not None and self.config.eval_steps > 0)

    def train(self, log=print):
        """Runs to `config.train_steps`, resuming first; returns the last logged metrics.

        SIGTERM or SIGINT (handled while training, in the main thread) stops it after the compiled call in
        progress: a checkpoint at the current step is saved and `TrainingInterrupted` raised; a second signal
        ends the process at once. Under several workers they agree on stopping at each call's boundary, and a
        worker that ends or stops responding makes the others raise `WorkerLostError` (within TensorFlow's
        coordination-service heartbeat timeout, about 10 s) instead of waiting on it.
        """
        with _StopSignals() as stop:
            try:
                return self._train(stop, log)
            except _LOST_PEER_ERRORS as e:
                if self.workers == 1 or _ABORTED_COLLECTIVES not in str(e):
                    raise
                raise self._worker_lost(e) from e

    def _worker_lost(self, error):
        """The `WorkerLostError` for TensorFlow's `error` that aborted this worker's collectives."""
        message = str(error)
        lines = message[message.index(_ABORTED_COLLECTIVES) + len(_ABORTED_COLLECTIVES) :].splitlines()
        # Its first line, and the next when the first ends in ":" (the coordination service's list of tasks).
        cause = " ".join(" ".join(lines[: 2 if len(lines) > 1 and lines[0].endswith(":") else 1]).split())
        cause = f"{type(error).__name__}: {cause[:200] + '...' if len(cause) > 200 else cause}"
        resolver = self.strategy.cluster_resolver
        own = (resolver.task_type, resolver.task_id)
        unhealthy = message.find("unhealthy")  # the coordination service names the tasks without heartbeats
        named = [(job, int(task)) for job, task in _TASK.findall(message[unhealthy if unhealthy >= 0 else 0 :])]
        if not named and "CoordinationService/Heartbeat" in message:  # the service's own task stopped answering
            jobs = resolver.cluster_spec().as_dict()
            named = [("chief" if "chief" in jobs else "worker", 0)]
        lost = next((task for task in named if task != own), None)
        if lost is None:
            who = f"another of the {self.workers} workers"
        elif lost[0] == "worker":
            who = f"worker {lost[1]} of {self.workers}"
        else:
            who = f"{lost[0]} {lost[1]} of the {self.workers} workers"
        directory = os.path.join(self.model_dir, "checkpoints")
        names = [os.path.basename(p) for p in checkpoints_in(directory)]
        kept = (
            f"checkpoints kept in {directory}: {', '.join(names)} (newest)"
            if names
            else f"no checkpoint was saved in {directory}"
        )
        return WorkerLostError(
            f"{who} stopped responding ({cause}); {kept}; re-run the same command on every worker to continue."
        )

    def _agree(self, stop, steps):
        """At a compiled call's boundary: (the stop signal received, on any worker, or None; the steps of the next
        call). Under several workers one collective sums both, so every worker stops at the same step and takes
        calls of the same length (the mean of their proposals: each times its own steps)."""
        signum = stop.received
        if self._sum_over_workers is None:  # every worker calls this at the same boundaries
            return signum, steps
        flags = tf.constant([float(signum == s) for s in STOP_SIGNALS] + [float(steps)])
        totals = self._sum_over_workers(flags).numpy()
        signum = next((s for s, total in zip(STOP_SIGNALS, totals) if total > 0), None)
        return signum, max(int(totals[-1]) // self.strategy.num_replicas_in_sync, 1)

    def _stop(self, signum, log):
        """Saves at the current step and raises `TrainingInterrupted` for `signum`."""
        if self._saved_step != self.step:
            self.save()
        path = os.path.join(self.model_dir, "checkpoints", f"ckpt-{self.step}")
        message = (
            f"Received {signal.Signals(signum).name} at step {self.step}: saved {path}; "
            "re-run the same command to continue."
        )
        log(message)
        raise TrainingInterrupted(message, signum, self.step)

    def _call_steps(self, remaining, seconds_per_step):
        """Steps of the next compiled call: the rest of the block, fewer when that would keep the console silent
        for more than `progress_seconds`; 1 while the time of a step is not known yet (the first call also traces
        and compiles, so the first two calls take one step each)."""
        if not self.config.progress_seconds or remaining <= 1:
            return remaining
        if seconds_per_step is None:
            return 1
        return max(1, min(remaining, int(self.config.progress_seconds / max(seconds_per_step, 1e-9))))

    @staticmethod
    def _console(log, progress):
        """`log` that first ends the progress bar's line, so a message never continues the bar's text."""

        def say(message):
            if progress.line_open:
                sys.stdout.write("\n")
                sys.stdout.flush()
                progress._prev_total_width = 0  # the next update starts the bar on the new line
            log(message)

        return say

    def _train(self, stop, log):
        start = self.resume()
        if self.train_iterator is None:  # data_position="step": the data of the steps since it last started over
            fresh = self.fresh_data_through
            self.train_iterator = self._start_data(start - fresh if fresh is not None and start >= fresh else start)
        progress = _Progress(
            self.config.train_steps,
            start,
            stateful_metrics=self.objective.progress_metrics + ["lr", "examples/s"],
            verbose=1 if self.chief else 0,
        )
        log = self._console(log, progress)
        if start >= self.config.train_steps:
            log(f"Training in {self.model_dir} is already complete at step {start}.")
            return {}
        if start:
            log(f"Resumed from step {start} in {self.model_dir}")
        elif self.config.initial_checkpoint:
            self.save()  # step 0: the last good checkpoint until the first interval
        writer = (
            tf.summary.create_file_writer(os.path.join(self.model_dir, "logs", "train"))
            if self.chief
            else tf.summary.create_noop_writer()
        )
        eval_writer = (
            tf.summary.create_file_writer(os.path.join(self.model_dir, "logs", "eval"))
            if self.chief
            else tf.summary.create_noop_writer()
        )
        progress.update(start)
        metrics, retries, skipped = {}, 0, 0
        # A block is what one call did before progress_seconds: `steps_per_loop` steps, cut at the checkpoint,
        # evaluation and last steps. Its calls may be shorter; its metrics (logged at its end) cover all its batches.
        block_end, block, batches, seconds_per_step, calls = None, {}, 0, None, 0
        notice = _first_call_notice(log)
        try:
            while self.step < self.config.train_steps:
                step = self.step
                if block_end is None or step >= block_end:
                    boundaries = [
                        self.config.train_steps,
                        (step // self.config.checkpoint_steps + 1) * self.config.checkpoint_steps,
                    ]
                    if self._evaluates:
                        boundaries.append((step // self.config.eval_interval + 1) * self.config.eval_interval)
                    block_end = step + min(self.config.steps_per_loop, min(boundaries) - step)
                    block, batches = {k: 0.0 for k in self.objective.stat_names}, 0
                signum, steps = self._agree(stop, self._call_steps(block_end - step, seconds_per_step))
                if signum:
                    self._stop(signum, log)
                began = time.time()
                totals = {k: float(v) for k, v in self._train_loop(self.train_iterator, tf.constant(steps)).items()}
                elapsed = time.time() - began
                notice.cancel()
                calls += 1
                if calls > 1:  # the first call also traced and compiled
                    seconds_per_step = elapsed / steps
                if not math.isfinite(totals["loss"]):
                    if retries >= self.config.nonfinite_retries:
                        raise NonFiniteLossError(
                            f"Non-finite loss ({totals['loss']}) in steps {step + 1}..{step + steps}; the last good "
                            f"checkpoint in {os.path.join(self.model_dir, 'checkpoints')} is kept."
                        )
                    retries += 1
                    log(
                        f"Non-finite loss in steps {step + 1}..{step + steps}: restoring the last checkpoint and "
                        f"skipping these batches (retry {retries} of {self.config.nonfinite_retries})."
                    )
                    if self.data_checkpoint is None:  # data_position="step": the iterator is already past them
                        self.resume()
                    else:
                        position = self.data_checkpoint.write(os.path.join(self.model_dir, ".skip"))
                        self.resume()
                        self.data_checkpoint.read(position)
                    block_end = None
                    continue
                block = {k: block[k] + totals[k] for k in block}
                batches += steps
                metrics = self.objective.summary(block, batches)
                if hasattr(self.optimizer, "dynamic_scale"):  # float16: overflowing steps are skipped, not applied
                    skipped += self._report_skipped(step, steps, skipped, log)
                    metrics["loss_scale"] = float(self.optimizer.dynamic_scale.numpy())
                    metrics["skipped_steps"] = skipped
                metrics["lr"] = (
                    float(self.optimizer.learning_rate.numpy())
                    if hasattr(self.optimizer.learning_rate, "numpy")
                    else float(self.optimizer.learning_rate)
                )
                metrics["examples/s"] = steps * self.global_batch_size / max(elapsed, 1e-9)
                progress.update(self.step, [(k, v) for k, v in metrics.items() if k in progress.stateful_metrics])
                if self.step < block_end:
                    continue
                with writer.as_default(step=self.step):
                    for name, value in metrics.items():
                        tf.summary.scalar(name, value)
                if self.step % self.config.checkpoint_steps == 0 or self.step >= self.config.train_steps:
                    self.save()
                if self._evaluates and (
                    self.step % self.config.eval_interval == 0 or self.step >= self.config.train_steps
                ):
                    log(f"Evaluating at step {self.step} ...")
                    began = time.time()
                    results = self.evaluate()
                    log(
                        f"Evaluation at step {self.step} ({time.time() - began:.0f} s): "
                        + ", ".join(f"{k} {v:.4f}" for k, v in results.items())
                    )
                    with eval_writer.as_default(step=self.step):
                        for name, value in results.items():
                            tf.summary.scalar(name, value)
                    metrics.update({f"eval_{k}": v for k, v in results.items()})
        finally:
            notice.cancel()
        writer.flush()
        eval_writer.flush()
        return metrics

    def _report_skipped(self, step, batches, earlier, log):
        """Logs the batches of the last call whose update dynamic loss scaling skipped; returns their count.

        A skipped update (gradients overflowed float16) does not count as a step, so the run takes more
        batches than `train_steps`; the loss scale halves at each skip.
        """
        skipped = step + batches - self.step
        if skipped:
            log(
                f"float16 loss scaling skipped {skipped} of {batches} updates after step {step} (gradients "
                f"overflowed); loss scale now {float(self.optimizer.dynamic_scale.numpy()):g}; "
                f"{earlier + skipped} skipped in this run."
            )
        return skipped


__all__ = [
    "INCOMPATIBLE",
    "TRAINING_SETTINGS_FILE",
    "Head",
    "LoopConfig",
    "NonFiniteLossError",
    "Objective",
    "ResumeError",
    "STOP_SIGNALS",
    "TrainingInterrupted",
    "TrainingLoop",
    "WorkerLostError",
    "newest_step",
    "read_training_settings",
]
