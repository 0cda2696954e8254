"""bert-tf-export, -vocab, -convert and the demo declare no flag by hand: each flag is a field of the app's option
class (`bert_tf.options.option`), generated with its help, bounds and choices, and the same flag as when the flags
were defined by hand (`app_flags.json`, recorded from the hand-written definitions; a flag changed on purpose
changes that file too)."""

import dataclasses
import json
import os
import subprocess

import pytest

from tests.launcher import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APPS = [
    ("bert_tf.apps.export", "ExportConfig"),
    ("bert_tf.apps.vocab", "VocabOptions"),
    ("bert_tf.apps.convert", "ConvertOptions"),
    ("bert_tf.apps.demo", "DemoOptions"),
]

# Each app alone in a fresh process, as its command runs it (vocab and convert both name a flag --input, of two
# kinds: a process importing both keeps the last definition).
_DESCRIBE = """
import dataclasses, importlib, json, sys
from bert_tf.apps import common_flags
module = importlib.import_module(sys.argv[1])
flag_values = common_flags.flags.FLAGS
names = common_flags.app_flag_names(module)
print(json.dumps({
    "described": {
        name: {
            "parser": type(flag_values[name].parser).__name__,
            "default": flag_values[name].default,
            "help": flag_values[name].help,
            "lower_bound": getattr(flag_values[name].parser, "lower_bound", None),
            "upper_bound": getattr(flag_values[name].parser, "upper_bound", None),
            "enum": list(getattr(flag_values[name].parser, "enum_values", None) or []) or None,
        }
        for name in names
    },
    "fields": [f.name for f in dataclasses.fields(getattr(module, sys.argv[2]))],
}))
"""


@pytest.fixture(scope="module", params=APPS, ids=[app for app, _ in APPS])
def app_description(request):
    result = subprocess.run(
        python_command("-c", _DESCRIBE, *request.param), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return request.param[0], json.loads(result.stdout.strip().splitlines()[-1])


def test_flags_are_the_fields_of_the_app_options(app_description):
    app, described = app_description
    assert sorted(described["described"]) == sorted(described["fields"]), app


def test_generated_flags_are_the_flags_the_app_had(app_description):
    app, described = app_description
    with open(os.path.join(os.path.dirname(__file__), "app_flags.json"), encoding="utf-8") as f:
        before = json.load(f)[app]
    assert sorted(described["described"]) == sorted(before), app
    differ = {
        name: {key: (before[name][key], value) for key, value in flag.items() if before[name][key] != value}
        for name, flag in described["described"].items()
    }
    assert {name: d for name, d in differ.items() if d} == {}, f"{app}: name: {{what: (before, now)}}"


@pytest.mark.parametrize("app", [app for app, _ in APPS])
def test_no_flag_is_declared_by_hand(app):
    with open(os.path.join(ROOT, *app.split(".")) + ".py", encoding="utf-8") as f:
        source = f.read()
    assert "DEFINE_" not in source, app


def test_the_export_flags_each_format_reads_are_options_of_its_call():
    from bert_tf.export import options

    for export_format, names in options.FORMAT_OPTIONS.items():
        fields = [field.name for field in dataclasses.fields(options.format_options_class(export_format))]
        assert fields == list(names), export_format
    config = {field.name for field in dataclasses.fields(options.export_config_class())}
    saved_model = {field.name for field in dataclasses.fields(options.saved_model_options_class())}
    assert saved_model < config and {"model_dir", "output_dir", "format", "quantize"} <= config - saved_model
