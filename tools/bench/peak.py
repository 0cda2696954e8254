"""peak: the FLOP/s of a large float32 and bfloat16 matmul (best repeat), the hardware limit MFU is measured against."""

from tools.bench.harness import Row, median_rates
from tools.bench.options import FLAGS

PEAKS = {}  # dtype -> FLOP/s, filled by `peak_rows` (the train and infer sections' MFU rows read it)


def peak_rows():
    import tensorflow as tf

    size = 512 if FLAGS.quick else 2048
    rows = []
    for dtype in ("float32", "bfloat16"):
        a = tf.cast(tf.random.normal((size, size)), dtype)
        matmul = tf.function(lambda a=a: tf.reduce_sum(tf.cast(tf.linalg.matmul(a, a), tf.float32)))
        # The peak is the best repeat, not the median: the hardware's limit, not a typical call.
        rate = median_rates(
            {dtype: lambda matmul=matmul: matmul().numpy()},
            2 * size**3,
            5,
            FLAGS.warmup,
            max(3, FLAGS.repeats),
            reduce=max,
        )[dtype]
        PEAKS[dtype] = rate
        rows.append(Row("peak", f"matmul {size}^3 {dtype}", "GFLOP/s", rate / 1e9))
    return rows
