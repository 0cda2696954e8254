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
import shutil
import time

import keras
import tensorflow as tf

from bert_tf.training.distribute import is_chief, worker_index

SETTINGS_FILE = "training_settings.json"
# Settings whose change makes an existing checkpoint unusable.
INCOMPATIBLE = ("model", "vocab_sha256", "max_seq_length", "max_predictions_per_seq", "global_batch_size", "nsp")
_STATS = ("loss", "mlm_loss", "nsp_loss", "mlm_correct", "mlm_count", "nsp_correct", "nsp_count")


class ResumeError(RuntimeError):
    """An existing run in model_dir cannot be continued as asked; says why."""


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; names the step."""


@dataclasses.dataclass
class LoopConfig:
    train_steps: int
    steps_per_loop: int = 100  # steps per tf.function call, between host logging
    checkpoint_steps: int = 1000
    keep_checkpoints: int = 3
    eval_steps: int = 0  # batches per evaluation; 0 disables evaluation
    eval_interval: int = 1000  # steps between evaluations
    grad_accum_steps: int = 1
    clip_norm: float = 1.0  # global-norm clip of the whole step's gradient; 0 disables it
    jit_compile: bool = False
    nonfinite_retries: int = 0  # restore the last checkpoint and skip the batch this many times


def _weighted_ce(labels, logits, weights):
    """Sum of weighted cross-entropy and of weighted correct predictions."""
    ce = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
    correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), tf.cast(labels, tf.int32)), tf.float32)
    return tf.reduce_sum(ce * weights), tf.reduce_sum(correct * weights)


class PretrainingLoop:
    """Trains a `BertPretrainer` with `strategy`; see the module docstring.

    Args:
        strategy: a `tf.distribute.Strategy`; model and optimizer must have been
            created inside `strategy.scope()`.
        model: a `BertPretrainer`.
        optimizer: a Keras optimizer (a `LossScaleOptimizer` for float16)
            without clipping of its own: the loop clips (`LoopConfig.clip_norm`).
        train_dataset_fn: function of a `tf.distribute.InputContext` returning
            this worker's `(features, labels, sample_weights)` dataset with
            per-worker batch size.
        eval_dataset_fn: same for the held-out data, or None.
        model_dir: checkpoints (`model_dir/checkpoints`) and TensorBoard logs
            (`model_dir/logs`) go here.
        settings: dict written to `training_settings.json`; a resume with a
            different value of any INCOMPATIBLE key is refused.
    """

    def __init__(self, strategy, model, optimizer, train_dataset_fn, global_batch_size, model_dir, config,
                 eval_dataset_fn=None, settings=None):
        self.strategy = strategy
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
                f"grad_accum_steps ({config.grad_accum_steps}). Received: global_batch_size={global_batch_size}")
        self.local_replicas = len(strategy.extended.worker_devices)
        workers = max(replicas // self.local_replicas, 1)
        context = tf.distribute.InputContext(num_input_pipelines=workers, input_pipeline_id=worker_index(strategy),
                                             num_replicas_in_sync=replicas)
        self.worker_batch = global_batch_size // workers
        self.train_iterator = iter(train_dataset_fn(context))
        self.eval_dataset = eval_dataset_fn(context) if eval_dataset_fn else None
        if not optimizer.built:
            with strategy.scope():  # slots are created here, not inside the compiled loop
                optimizer.build(model.trainable_variables)
        # Dropout draws from per-layer seed states that tf.train.Checkpoint does not reach through the model:
        # saving them is what makes a resumed run draw the same dropout masks as an uninterrupted one.
        seed_states = [generator.state for layer in model._flatten_layers(include_self=True, recursive=True)
                       for generator in getattr(layer, "_seed_generators", [])]
        self.checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, dropout_seeds=seed_states)
        self.data_checkpoint = tf.train.Checkpoint(iterator=self.train_iterator)
        self._compiled_micro_step = (tf.function(self._micro_step, jit_compile=True) if config.jit_compile
                                     else self._micro_step)
        self._train_loop = tf.function(self._loop, reduce_retracing=True)
        self._eval_batch = tf.function(self._evaluate_batch)

    # === Steps ===

    def _replica_share(self, batch):
        """This replica's slice of the worker's batch."""
        def value_fn(context):
            index = context.replica_id_in_sync_group % self.local_replicas
            size = self.worker_batch // self.local_replicas
            return tf.nest.map_structure(lambda t: t[index * size:(index + 1) * size], batch)
        return self.strategy.experimental_distribute_values_from_function(value_fn)

    def _losses(self, outputs, labels, weights, mlm_total, nsp_total):
        mlm_sum, mlm_correct = _weighted_ce(labels["mlm"], outputs["mlm"], weights["mlm"])
        stats = {"mlm_loss": mlm_sum / mlm_total, "mlm_correct": mlm_correct,
                 "mlm_count": tf.reduce_sum(weights["mlm"])}
        loss = stats["mlm_loss"]
        if "nsp" in outputs:
            nsp_sum, nsp_correct = _weighted_ce(labels["nsp"], outputs["nsp"], weights["nsp"])
            stats.update(nsp_loss=nsp_sum / nsp_total, nsp_correct=nsp_correct,
                         nsp_count=tf.reduce_sum(weights["nsp"]))
            loss = loss + stats["nsp_loss"]
        else:
            stats.update(nsp_loss=0.0, nsp_correct=0.0, nsp_count=0.0)
        stats["loss"] = loss
        return loss, stats

    def _global_totals(self, weights):
        """Global sums of the MLM and NSP weights of this step (all replicas)."""
        context = tf.distribute.get_replica_context()
        mlm = context.all_reduce("sum", tf.reduce_sum(weights["mlm"]))
        nsp = context.all_reduce("sum", tf.reduce_sum(weights["nsp"])) if "nsp" in weights else tf.constant(1.0)
        return tf.maximum(mlm, 1.0), tf.maximum(nsp, 1.0)

    def _micro_step(self, part, mlm_total, nsp_total):
        """Gradients and statistics of one micro-batch (XLA-compiled with `jit_compile`)."""
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs = self.model(part[0], training=True)
            loss, stats = self._losses(outputs, part[1], part[2], mlm_total, nsp_total)
            scaled = self.optimizer.scale_loss(loss) if hasattr(self.optimizer, "scale_loss") else loss
        return tape.gradient(scaled, variables), {k: tf.cast(stats[k], tf.float32) for k in _STATS}

    def _replica_step(self, batch):
        features, labels, weights = batch
        mlm_total, nsp_total = self._global_totals(weights)
        variables = self.model.trainable_variables
        micro = self.config.grad_accum_steps
        size = tf.shape(features["token_ids"])[0] // micro
        grads = [tf.zeros_like(v) for v in variables]
        totals = {k: tf.constant(0.0) for k in _STATS}
        for i in range(micro):
            part = tf.nest.map_structure(lambda t: t[i * size:(i + 1) * size], (features, labels, weights))
            micro_grads, stats = self._compiled_micro_step(part, mlm_total, nsp_total)
            grads = [g + d for g, d in zip(grads, micro_grads)]
            totals = {k: totals[k] + stats[k] for k in _STATS}
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
        totals = {k: tf.constant(0.0) for k in _STATS}
        for _ in tf.range(steps):
            stats = self.strategy.run(self._replica_step, args=(self._replica_share(next(iterator)),))
            totals = {k: totals[k] + self.strategy.reduce("sum", stats[k], axis=None) for k in _STATS}
        return totals

    def _evaluate_batch(self, batch):
        def step(part):
            features, labels, weights = part
            mlm_total, nsp_total = self._global_totals(weights)
            return self._losses(self.model(features, training=False), labels, weights, mlm_total, nsp_total)[1]
        stats = self.strategy.run(step, args=(self._replica_share(batch),))
        return {k: self.strategy.reduce("sum", stats[k], axis=None) for k in _STATS}

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
        manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=self.config.keep_checkpoints,
                                             step_counter=self.optimizer.iterations)
        os.makedirs(os.path.join(self.model_dir, "checkpoints"), exist_ok=True)
        self.data_checkpoint.write(self._data_prefix(step))
        manager.save(checkpoint_number=step)
        if not self.chief:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            kept = {int(p.rsplit("-", 1)[1]) for p in manager.checkpoints}
            for index in glob.glob(self._data_prefix("*") + ".index"):
                number = int(index[:-len(".index")].rsplit("-", 1)[1])
                if number not in kept:
                    for path in glob.glob(index[:-len(".index")] + ".*"):
                        os.remove(path)

    def resume(self):
        """Restores the newest usable checkpoint; returns its step (0 for a new run).

        Refuses incompatible settings (ResumeError listing the differences),
        falls back from a corrupt newest checkpoint to the previous one, errors
        on a garbage checkpoint-state file, and removes leftover temporary files.
        """
        directory = os.path.join(self.model_dir, "checkpoints")
        self._check_settings()
        for leftover in glob.glob(os.path.join(directory, "*.tmp*")) + glob.glob(
                os.path.join(self.model_dir, ".worker_*_tmp")):
            shutil.rmtree(leftover, ignore_errors=True) if os.path.isdir(leftover) else os.remove(leftover)
        state_file = os.path.join(directory, "checkpoint")
        if not os.path.exists(state_file):
            return 0
        try:
            state = tf.train.get_checkpoint_state(directory)
        except Exception as e:  # a text-proto parse error
            raise ResumeError(f"{state_file} is not a valid checkpoint-state file ({type(e).__name__}: {e}); "
                              "fix or remove it. Refusing to restart from step 0.") from None
        if state is None or not state.all_model_checkpoint_paths:
            raise ResumeError(f"{state_file} lists no checkpoints; fix or remove it. Refusing to restart from step 0.")
        candidates = [os.path.join(directory, os.path.basename(p)) for p in state.all_model_checkpoint_paths]
        errors = []
        for path in reversed(candidates):
            step = int(path.rsplit("-", 1)[1])
            try:
                self.checkpoint.read(path).assert_existing_objects_matched()
                self.data_checkpoint.read(self._data_prefix(step)).assert_consumed()
            except Exception as e:  # noqa: BLE001 (any unreadable file: OpError, IndexError, ...)
                errors.append(f"{path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                logging.warning("Checkpoint %s is unreadable (%s); trying the previous one.", path, errors[-1])
                continue
            if self.step != step:
                raise ResumeError(f"{path} holds step {self.step}, not {step}.")
            return step
        raise ResumeError("No checkpoint in " + directory + " could be read:\n  " + "\n  ".join(errors))

    def _check_settings(self):
        path = os.path.join(self.model_dir, SETTINGS_FILE)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                saved = json.load(f)
            differences = [f"  {key}: checkpoint has {saved.get(key)!r}, this run has {self.settings.get(key)!r}"
                           for key in INCOMPATIBLE if saved.get(key) != self.settings.get(key)]
            if differences:
                raise ResumeError(f"{self.model_dir} holds a run with incompatible settings; use a new --model_dir "
                                  "or the old settings:\n" + "\n".join(differences))
        elif self.chief:
            os.makedirs(self.model_dir, exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(self.settings, f, indent=2, sort_keys=True)

    # === The loop ===

    def evaluate(self):
        totals = {k: 0.0 for k in _STATS}
        for batch in self.eval_dataset.take(self.config.eval_steps):
            for k, v in self._eval_batch(batch).items():
                totals[k] += float(v)
        return _summary(totals, max(self.config.eval_steps, 1))

    def train(self, log=print):
        """Runs to `config.train_steps`, resuming first; returns the last logged metrics."""
        start = self.resume()
        if start:
            log(f"Resumed from step {start} in {self.model_dir}")
        else:
            self.save()  # step 0: the last good checkpoint until the first interval
        writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "logs", "train")) if self.chief \
            else tf.summary.create_noop_writer()
        eval_writer = tf.summary.create_file_writer(os.path.join(self.model_dir, "logs", "eval")) if self.chief \
            else tf.summary.create_noop_writer()
        progress = keras.utils.Progbar(self.config.train_steps, stateful_metrics=[
            "loss", "mlm_acc", "nsp_acc", "lr", "examples/s"], verbose=1 if self.chief else 0)
        progress.update(start)
        metrics, retries = {}, 0
        while self.step < self.config.train_steps:
            step = self.step
            boundaries = [self.config.train_steps, (step // self.config.checkpoint_steps + 1) * self.config.checkpoint_steps]
            if self.eval_dataset is not None and self.config.eval_steps:
                boundaries.append((step // self.config.eval_interval + 1) * self.config.eval_interval)
            steps = min(self.config.steps_per_loop, min(boundaries) - step)
            began = time.time()
            totals = {k: float(v) for k, v in self._train_loop(self.train_iterator, tf.constant(steps)).items()}
            elapsed = time.time() - began
            if not math.isfinite(totals["loss"]):
                if retries >= self.config.nonfinite_retries:
                    raise NonFiniteLossError(
                        f"Non-finite loss ({totals['loss']}) in steps {step + 1}..{step + steps}; the last good "
                        f"checkpoint in {os.path.join(self.model_dir, 'checkpoints')} is kept.")
                retries += 1
                log(f"Non-finite loss in steps {step + 1}..{step + steps}: restoring the last checkpoint and "
                    f"skipping these batches (retry {retries} of {self.config.nonfinite_retries}).")
                position = self.data_checkpoint.write(os.path.join(self.model_dir, ".skip"))
                self.resume()
                self.data_checkpoint.read(position)
                continue
            metrics = _summary(totals, steps)
            metrics["lr"] = float(self.optimizer.learning_rate.numpy()) if hasattr(
                self.optimizer.learning_rate, "numpy") else float(self.optimizer.learning_rate)
            metrics["examples/s"] = steps * self.global_batch_size / max(elapsed, 1e-9)
            with writer.as_default(step=self.step):
                for name, value in metrics.items():
                    tf.summary.scalar(name, value)
            progress.update(self.step, [(k, v) for k, v in metrics.items() if k in progress.stateful_metrics])
            if self.step % self.config.checkpoint_steps == 0 or self.step >= self.config.train_steps:
                self.save()
            if self.eval_dataset is not None and self.config.eval_steps and self.step % self.config.eval_interval == 0:
                results = self.evaluate()
                with eval_writer.as_default(step=self.step):
                    for name, value in results.items():
                        tf.summary.scalar(name, value)
                metrics.update({f"eval_{k}": v for k, v in results.items()})
        writer.flush()
        eval_writer.flush()
        return metrics


def _summary(totals, steps):
    summary = {
        "loss": totals["loss"] / steps,
        "mlm_loss": totals["mlm_loss"] / steps,
        "mlm_acc": totals["mlm_correct"] / max(totals["mlm_count"], 1.0),
    }
    if totals["nsp_count"]:
        summary.update(nsp_loss=totals["nsp_loss"] / steps, nsp_acc=totals["nsp_correct"] / totals["nsp_count"])
    return summary


__all__ = ["LoopConfig", "NonFiniteLossError", "PretrainingLoop", "ResumeError"]
