"""Each flag of bert-tf-pretrain and bert-tf-finetune is a field of its library config of the same name and default."""

import dataclasses
import json
import subprocess
import sys

import pytest
from absl import flags

from bert_tf.apps import common_flags

# Each app alone in a fresh process, as its bert-tf-* command runs it: a process importing both apps keeps one
# definition of their shared flag names (allow_override), so their own flag lists and defaults are only seen apart.
_DESCRIBE = """
import dataclasses, importlib, json, sys
from bert_tf.apps import common_flags
module = importlib.import_module(sys.argv[1])
config_class = getattr(module, sys.argv[2])
flag_values = common_flags.flags.FLAGS
names = common_flags.app_flag_names(module)
defaults = {
    f.name: f.default for f in dataclasses.fields(config_class) if f.default is not dataclasses.MISSING
}
defaults.update(
    {f.name: f.default_factory() for f in dataclasses.fields(config_class) if f.default_factory is not dataclasses.MISSING}
)
print(json.dumps({
    "flags": sorted(names),
    "flag_defaults": {name: flag_values[name].default for name in names},
    "fields": [f.name for f in dataclasses.fields(config_class)],
    "field_defaults": defaults,
}))
"""


@pytest.fixture(
    scope="module",
    params=[
        ("bert_tf.apps.pretrain", "PretrainConfig"),
        ("bert_tf.apps.finetune", "FinetuneConfig"),
        ("bert_tf.apps.distill", "DistillConfig"),
    ],
)
def app_description(request):
    result = subprocess.run(
        [sys.executable, "-c", _DESCRIBE, *request.param], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return request.param[0], json.loads(result.stdout.strip().splitlines()[-1])


def test_every_flag_has_a_field_and_every_field_a_flag(app_description):
    app, described = app_description
    flag_names = set(described["flags"]) - set(common_flags.PROCESS_FLAGS)
    fields = set(described["fields"])
    assert sorted(flag_names - fields) == [], f"{app}: flags without a config field"
    assert sorted(fields - flag_names) == [], f"{app}: config fields without a flag"
    assert set(common_flags.PROCESS_FLAGS) <= set(described["flags"]), app


def test_flag_defaults_are_the_config_defaults(app_description):
    app, described = app_description
    differ = {
        name: (described["flag_defaults"][name], default)
        for name, default in described["field_defaults"].items()
        if name in described["flag_defaults"] and described["flag_defaults"][name] != default
    }
    assert differ == {}, f"{app}: name: (flag default, config default)"


@dataclasses.dataclass
class _Config:
    steps: int
    rate: float = 0.1


def _flag_values(*names):
    flag_values = flags.FlagValues()
    for name in names:
        flags.DEFINE_integer(name, 3, "A test flag.", flag_values=flag_values)
    return flag_values


def test_config_from_flags_maps_by_name():
    flag_values = _flag_values("steps", "rate", "strategy")
    flag_values(["prog", "--steps=7", "--rate=2"])
    config = common_flags.config_from_flags(_Config, sys.modules[__name__], flag_values=flag_values)
    assert config == _Config(steps=7, rate=2)


@pytest.mark.parametrize(
    "names, message",
    [
        (("steps",), r"fields without a flag \['rate'\], flags without a field \[\]"),  # a renamed flag
        (("steps", "rate", "extra"), r"fields without a flag \[\], flags without a field \['extra'\]"),
    ],
)
def test_config_from_flags_refuses_a_flag_without_field_and_a_field_without_flag(names, message):
    with pytest.raises(TypeError, match=message):
        common_flags.config_from_flags(_Config, sys.modules[__name__], flag_values=_flag_values(*names))
