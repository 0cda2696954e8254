"""Optimizers and learning-rate schedules for BERT training.

AdamW or LAMB with decoupled weight decay that skips LayerNorm parameters
and biases (as the original BERT optimizer does), global-norm clipping, and a
linear warmup followed by linear decay to zero.
"""

import keras
import tensorflow as tf

OPTIMIZERS = ("adamw", "lamb")
# Substrings of Keras variable names that get no weight decay: LayerNorm
# gamma/beta and every bias (Dense biases, the masked-LM output bias).
NO_DECAY_NAMES = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="bert_tf")
class FusedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW` in fewer passes over memory: Keras' formulas, in its order.

    Keras' AdamW makes many passes over memory per step: the global norm
    squares every gradient (and densifies the squared word-embedding rows to
    sum them), clipping multiplies every gradient, weight decay multiplies
    and subtracts every variable, and the Adam update is about a dozen
    element-wise ops over the variable and its two moments. For a MiniLM-size
    model fine-tuned on short sentences that was about 40% of the step's op
    time on 2 CPU cores, most of it on the 30522 x H embedding table, of which a step
    touches a few hundred rows.

    Here the global norm is one reduction per gradient (`l2_loss`), and the
    clip factor scales a sparse (`IndexedSlices`) gradient's rows before it
    is densified, as every AdamW update densifies it. A token repeated in
    the batch gives its row more than once: its rows are summed first, so
    the norm is that of the dense gradient (Keras squares the rows as given
    and counts each copy); weight decay
    (`var -= var * weight_decay * lr`, skipping the exclusions) is one op;
    and the Adam update is TensorFlow's `ResourceApplyAdam`, one
    multi-threaded pass (`m += (g - m)(1 - b1)`, `v += (g^2 - v)(1 - b2)`,
    `var -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)`).
    Slots, checkpoints, loss scaling and distribution are AdamW's own; with
    more than one replica in sync, clipping is Keras' (per replica, before
    the sum).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clip_scale = None  # the global-norm clip factor of the `apply` being traced (one replica only)

    def _clip_gradients(self, grads):
        self._clip_scale = None
        one_replica = self._distribution_strategy is None or self._distribution_strategy.num_replicas_in_sync == 1
        if self.amsgrad or not (self.global_clipnorm and self.global_clipnorm > 0) or not one_replica:
            return super()._clip_gradients(grads)
        grads = [_summed_rows(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        norm = tf.sqrt(tf.add_n([2.0 * tf.nn.l2_loss(tf.cast(_values(g), tf.float32)) for g in grads if g is not None]))
        # Keras' factor, NaN when the norm is not finite.
        self._clip_scale = self.global_clipnorm * tf.minimum(1.0 / norm, 1.0 / self.global_clipnorm) + (norm - norm)
        return grads

    def _backend_apply_gradients(self, grads, trainable_variables):
        try:
            super()._backend_apply_gradients(grads, trainable_variables)
        finally:
            self._clip_scale = None  # a tensor of the graph just traced: no later update may read it

    def _apply_weight_decay(self, variables):
        if self.amsgrad:
            super()._apply_weight_decay(variables)
        # else: `update_step` decays each variable in its one pass

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        sparse = isinstance(gradient, tf.IndexedSlices)
        if self._clip_scale is not None:  # a sparse gradient's rows, not the densified table
            scale = tf.cast(self._clip_scale, _values(gradient).dtype)
            if sparse:
                gradient = tf.IndexedSlices(gradient.values * scale, gradient.indices, gradient.dense_shape)
            else:
                gradient = gradient * scale
        if sparse:
            gradient = tf.convert_to_tensor(gradient)
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        decays = self.weight_decay is not None and self._use_weight_decay(variable)
        _adamw_update(
            _variable(variable),
            _variable(self._momentums[index]),
            _variable(self._velocities[index]),
            tf.cast(gradient, dtype),
            tf.cast(learning_rate, dtype),
            tf.cast(self.weight_decay, dtype) if decays else None,
            tf.pow(beta_1, step),
            tf.pow(beta_2, step),
            beta_1,
            beta_2,
            tf.cast(self.epsilon, dtype),
        )


def _adamw_update(variable, m, v, gradient, lr, decay, beta_1_power, beta_2_power, beta_1, beta_2, epsilon):
    """AdamW on one variable's TensorFlow variables, in Keras' order (the gradient already clipped): decoupled weight
    decay (`decay` None: none), then `ResourceApplyAdam`."""
    if decay is not None:
        variable.assign_sub(variable.read_value() * decay * lr)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle,
        m=m.handle,
        v=v.handle,
        beta1_power=beta_1_power,
        beta2_power=beta_2_power,
        lr=lr,
        beta1=beta_1,
        beta2=beta_2,
        epsilon=epsilon,
        grad=gradient,
    )


def _summed_rows(gradient):
    """An `IndexedSlices` gradient with each row index once (repeated rows summed): the densified gradient's rows."""
    indices, position = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, position, tf.shape(indices)[0])
    return tf.IndexedSlices(values, indices, gradient.dense_shape)


def _values(gradient):
    return gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient


def _variable(variable):
    """The TensorFlow variable of a Keras or TensorFlow variable (the local copy inside a strategy update)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * step / warmup` for `step < warmup`, then linear decay to 0 at `total_steps`."""

    def __init__(self, peak_learning_rate, warmup_steps, total_steps):
        if total_steps <= 0 or warmup_steps < 0 or warmup_steps > total_steps:
            raise ValueError(
                "Need 0 <= warmup_steps <= total_steps and total_steps > 0. "
                f"Received: warmup_steps={warmup_steps}, total_steps={total_steps}"
            )
        if peak_learning_rate <= 0:
            raise ValueError(f"`peak_learning_rate` must be positive. Received: {peak_learning_rate}")
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps

    def __call__(self, step):
        step = keras.ops.cast(step, "float32")
        warmup = keras.ops.cast(self.warmup_steps, "float32")
        total = keras.ops.cast(self.total_steps, "float32")
        rising = self.peak_learning_rate * step / keras.ops.maximum(warmup, 1.0)
        falling = (
            self.peak_learning_rate * keras.ops.maximum(total - step, 0.0) / keras.ops.maximum(total - warmup, 1.0)
        )
        return keras.ops.where(step < warmup, rising, falling)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
        }


def create_optimizer(
    name="adamw",
    learning_rate=1e-4,
    total_steps=10_000,
    warmup_steps=0,
    weight_decay=0.01,
    clip_norm=1.0,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-6,
    loss_scale=False,
):
    """A Keras optimizer with BERT's schedule and weight-decay exclusions.

    Args:
        name: "adamw" or "lamb".
        clip_norm: global gradient-norm clip; None or 0 disables it. Under a
            multi-replica strategy Keras clips per replica: the training loop
            passes 0 here and clips the summed gradient itself.
        loss_scale: wrap in `keras.optimizers.LossScaleOptimizer` (float16).
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"`name` must be one of {OPTIMIZERS}. Received: name={name!r}")
    schedule = WarmupLinearDecay(learning_rate, warmup_steps, total_steps)
    common = dict(
        learning_rate=schedule,
        weight_decay=weight_decay or None,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        global_clipnorm=clip_norm or None,
    )
    optimizer = FusedAdamW(**common) if name == "adamw" else keras.optimizers.Lamb(**common)
    if weight_decay:
        optimizer.exclude_from_weight_decay(var_names=list(NO_DECAY_NAMES))
    if loss_scale:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def run_optimizer(config, train_steps, warmup_steps=None):
    """`create_optimizer` from a run config's `optimizer`, `learning_rate`, `weight_decay` and `dtype` (loss scaling
    under float16) for `train_steps`; warmup over `warmup_steps`, default `warmup_proportion` of `train_steps`. It
    clips nothing: the training loop clips the global gradient."""
    if warmup_steps is None:
        warmup_steps = int(config.warmup_proportion * train_steps)
    return create_optimizer(
        config.optimizer,
        config.learning_rate,
        train_steps,
        warmup_steps,
        config.weight_decay,
        clip_norm=0,
        loss_scale=config.dtype == "float16",
    )
