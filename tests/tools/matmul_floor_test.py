"""tools/matmul_floor.py: every side computes the same products; the script prints its table and refuses bad --tokens."""

import numpy as np

from tests.tools import run_tool
from tools import matmul_floor


def test_every_side_computes_the_chain_numpy_computes():
    weights = matmul_floor.layer_weights(layers=2, hidden=8, intermediate=16)
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    expected = matmul_floor.chain(x, weights, np.matmul)
    assert expected.shape == (3, 8)
    for name, function in matmul_floor.sides(weights, hidden=8).items():
        np.testing.assert_allclose(function(x), expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_script_prints_a_row_per_token_count_and_names_bad_tokens():
    args = ("--layers=1", "--hidden=8", "--intermediate=16", "--calls=2", "--repeats=1")
    result = run_tool("matmul_floor.py", "--tokens=2,5", *args)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in rows[1:]] == ["2", "5"]
    assert "TensorFlow MatMul, variables" in rows[0] and "CPU:" in result.stdout
    result = run_tool("matmul_floor.py", "--tokens=0", *args)
    assert result.returncode == 1 and "--tokens=0" in result.stderr
