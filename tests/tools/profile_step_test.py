"""tools/profile_step.py: its classes of a hand-made trace, its refusal of unknown settings, and a run end to end."""

import pytest

from tests.tools import run_tool
from tools import profile_step

MS = 10**9  # picoseconds


def _xspace(lines):
    """An XSpace of one "/host:CPU" plane: `lines` maps a line's name to `(event name, start ms, end ms)`s."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    xspace = xplane_pb2.XSpace()
    plane = xspace.planes.add(name="/host:CPU")
    ids = {}
    for line_name, events in lines.items():
        line = plane.lines.add(name=line_name)
        for name, start, end in events:
            if name not in ids:
                ids[name] = len(ids) + 1
                plane.event_metadata[ids[name]].id = ids[name]
                plane.event_metadata[ids[name]].name = name
            line.events.add(metadata_id=ids[name], offset_ps=start * MS, duration_ps=(end - start) * MS)
    return xspace


def test_each_op_and_xla_kernel_counts_once_in_its_class():
    xspace = _xspace(
        {
            "python": [
                ("step", 0, 100),
                ("EagerLocalExecute: __inference_step_1", 1, 99),
                ("KernelAndDeviceFunc::Run", 5, 95),
            ],
            "tf_Compute/1": [
                ("ExecutorState::Process", 0, 40),
                ("bert/dense/MatMul:_MklMatMul", 1, 21),
                ("ParallelFor", 2, 20),
                ("bert/attention_layer_norm/mul:Mul", 21, 26),
                ("ExecutorState::Process", 40, 90),
                ("ExecutorState::ProcessAsync::Start", 41, 61),
                ("CpuExecutable::ExecuteAsyncOnStream", 43, 58),
                ("multiply_convert_fusion", 44, 50),
                ("end: multiply_convert_fusion", 49, 50),
                ("fused_adam_w/ResourceApplyAdam_1:ResourceApplyAdam", 62, 72),
                ("Sparse/Sparse:SparseSoftmaxCrossEntropyWithLogits", 72, 82),
                ("bert/Cast:Cast", 82, 84),
            ],
            "tf_numa_-1_Eigen/2": [("ThunkExecutor::Execute", 44, 50), ("ynn_fusion.1", 44, 47)],
        }
    )
    report = profile_step.profile_totals(xspace, steps=2)
    expected = dict.fromkeys(profile_step.CLASSES, 0.0)
    expected.update(
        matmul=10, layer_norm=2.5, xla=7.5, xla_launch=2.5, optimizer=5, softmax=5, cast=1, executor=11.5, outside=5
    )
    assert report["classes"] == pytest.approx(expected)
    assert report["wall_ms"] == pytest.approx(50) == pytest.approx(sum(report["classes"].values()))
    assert report["ops"][0] == ("bert/dense/MatMul", "_MklMatMul", pytest.approx(10))
    assert dict(report["fusions"]) == pytest.approx({"multiply_convert_fusion": 3, "ynn_fusion.1": 1.5})


@pytest.mark.parametrize(
    "name, op_type, key",
    [
        ("adam_w/Sqrt_3", "Sqrt", "optimizer"),
        ("bert/embeddings/ArithmeticOptimizer/AddOpsRewrite_add_1", "AddV2", "other"),
        ("bert/transformer_layer_0/BiasAdd", "_MklNativeFusedMatMul", "matmul"),
        ("hub/self_attention_layer/softmax/Softmax", "_MklSoftmax", "softmax"),
        ("hub/feedforward_layer_norm/moments/mean", "Mean", "layer_norm"),
        ("gradient_tape/hub/intermediate_dense/Gelu/mul", "Mul", "gelu"),
        ("bert/dropout/stateless_dropout/GreaterEqual", "GreaterEqual", "dropout"),
        ("gradient_tape/hub/UnsortedSegmentSum", "UnsortedSegmentSum", "gather"),
        ("bert/transformer_layer_0/transpose", "_MklTranspose", "layout"),
    ],
)
def test_classify(name, op_type, key):
    assert profile_step.classify(name, op_type) == key


def test_unknown_settings_are_named():
    result = run_tool("profile_step.py", "--settings=float16")
    assert result.returncode == 1 and "float16" in result.stderr


@pytest.mark.parametrize("step", ["train", "forward"])
def test_a_tiny_step_profiles_to_a_table_with_matmul_time(step):
    result = run_tool(
        "profile_step.py",
        f"--step={step}",
        "--config=tiny",
        "--steps=1",
        "--warmup=1",
        "--settings=float32",
        "--sides=bert_tf",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert profile_step.STEPS[step] in result.stdout
    rows = {
        line.split("|")[1].strip(): line.split("|")[2:-1] for line in result.stdout.splitlines() if line[:2] == "| "
    }
    assert float(rows[profile_step.CLASSES["matmul"]][0]) > 0
    assert float(rows["seq/s without the profiler"][0]) > 0 and "inter-op threads 1" in result.stdout
