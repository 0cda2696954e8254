"""The layer tests check the XLA kernels themselves, so `when_static` uses them whatever the core count."""

import pytest

from bert_tf.layers import fused


@pytest.fixture(autouse=True)
def _xla_kernels_on(monkeypatch):
    monkeypatch.setenv(fused.ENV_VAR, "1")
