"""Each flag of bert-tf-pretrain, -finetune, -distill and -embed is a field of its library config of the same name
and default, generated from the field (its help, bounds and choices), and the same flag as before the flags were
generated (`app_flags.json`: each app's flags as they were defined by hand, issue 36; a flag changed on purpose
changes that file too)."""

import dataclasses
import sys

import pytest
from absl import flags

from bert_tf import options
from bert_tf.apps import common_flags, training_flags
from tests.apps.flag_description import DESCRIBED_FLAGS, assert_flags_as_recorded, describe_app

# Each app alone in a fresh process, as its bert-tf-* command runs it: a process importing both apps keeps one
# definition of their shared flag names (allow_override), so their own flag lists and defaults are only seen apart.
_DESCRIBE = (
    """
import dataclasses, importlib, json, sys
from bert_tf import options
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
    "described": """
    + DESCRIBED_FLAGS
    + """,
    "fields": [f.name for f in dataclasses.fields(config_class)],
    "field_defaults": defaults,
}))
"""
)


@pytest.fixture(
    scope="module",
    params=[
        ("bert_tf.apps.pretrain", "PretrainConfig"),
        ("bert_tf.apps.finetune", "FinetuneConfig"),
        ("bert_tf.apps.distill", "DistillConfig"),
        ("bert_tf.apps.embed", "EmbedConfig"),
    ],
)
def app_description(request):
    return describe_app(_DESCRIBE, *request.param)


def test_every_flag_has_a_field_and_every_field_a_flag(app_description):
    app, described = app_description
    flag_names = set(described["flags"]) - set(training_flags.PROCESS_FLAGS)
    fields = set(described["fields"])
    assert sorted(flag_names - fields) == [], f"{app}: flags without a config field"
    assert sorted(fields - flag_names) == [], f"{app}: config fields without a flag"
    if app != "bert_tf.apps.embed":  # the training apps
        assert set(training_flags.PROCESS_FLAGS) <= set(described["flags"]), app


def test_generated_flags_are_the_flags_the_app_had(app_description):
    app, described = app_description
    assert_flags_as_recorded(app, described["described"])


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
    config = training_flags.config_from_flags(_Config, sys.modules[__name__], flag_values=flag_values)
    assert config == _Config(steps=7, rate=2)  # the training apps' process flags have no field
    with pytest.raises(TypeError, match=r"flags without a field \['strategy'\]"):  # a read-only app has none
        common_flags.config_from_flags(_Config, sys.modules[__name__], flag_values=flag_values)


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


@dataclasses.dataclass(kw_only=True)
class _Options:
    count: int = options.option(2, "How many.", lower_bound=1)
    rate: float = options.option(0.5, "A share.", lower_bound=0.0, upper_bound=1.0)
    mode: str = options.option("a", "Which mode.", enum=("a", "b"))
    names: list = options.option(None, "Some names.")
    column: object = options.option(None, "A column: name or index.")
    loud: bool = options.option(False, "Speak up.")
    path: str = options.option(help="Required: the flag's default is None.")


@dataclasses.dataclass(kw_only=True)
class _Overridden(_Options):
    count: int = options.override(_Options, "count", default=5, help="How many here.", lower_bound=None)


def test_define_config_flags_makes_one_flag_per_field_with_its_declaration():
    flag_values = flags.FlagValues()
    common_flags.define_config_flags(_Overridden, "an_app", flag_values)
    assert {flag.name for flag in flag_values.get_key_flags_for_module("an_app")} == {
        f.name for f in dataclasses.fields(_Overridden)
    }
    count, rate, mode = flag_values["count"], flag_values["rate"], flag_values["mode"]
    assert (count.default, count.help, count.parser.lower_bound) == (5, "How many here.", None)
    assert (rate.parser.lower_bound, rate.parser.upper_bound) == (0.0, 1.0)
    assert mode.parser.enum_values == ["a", "b"] and mode.help == "<a|b>: Which mode."
    assert type(flag_values["names"].parser).__name__ == "ListParser"
    assert type(flag_values["column"].parser).__name__ == "ArgumentParser"
    assert flag_values["loud"].boolean and flag_values["path"].default is None
    flag_values(["prog", "--count=7", "--names=x,y", "--column=2", "--loud", "--path=p"])
    config = common_flags.config_from_flags(_Overridden, "an_app", flag_values=flag_values)
    assert config == _Overridden(count=7, names=["x", "y"], column="2", loud=True, path="p")
    with pytest.raises(flags.IllegalFlagValueError):
        flag_values["rate"].parse("2")


def test_compose_refuses_an_option_declared_twice():
    @dataclasses.dataclass(kw_only=True)
    class First:
        column: object = options.option(None, "A column.")

    @dataclasses.dataclass(kw_only=True)
    class Second:
        column: object = options.option(None, "Another column.")

    @dataclasses.dataclass(kw_only=True)
    class Own:
        steps: int = options.option(1, "Steps.")

    with pytest.raises(ValueError, match="'column' is declared twice, by First and Second"):
        options.compose("Run", (Own, First, Second))
    run = options.compose("Run", (Own, First, First), overrides={"column": {"help": "The run's column."}})
    assert options.compose("Run", (Own, First), overrides={"column": {"help": "The run's column."}}) is run
    assert run(column=3).column == 3 and run().steps == 1
    assert options.help_of(options.find_field(run, "column")) == "The run's column."
