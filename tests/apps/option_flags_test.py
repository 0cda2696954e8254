"""bert-tf-export, -vocab, -convert, -launch and the demo declare no flag by hand: each flag is a field of the app's
option class (`bert_tf.options.option`), generated with its help, bounds and choices, and the same flag as when the
flags were defined by hand (`app_flags.json`, recorded from the hand-written definitions; a flag changed on purpose
changes that file too; bert-tf-launch's were recorded from its option class when it was added)."""

import dataclasses
import os

import pytest

from tests.apps.flag_description import DESCRIBED_FLAGS, assert_flags_as_recorded, describe_app

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APPS = [
    ("bert_tf.apps.export", "ExportConfig"),
    ("bert_tf.apps.vocab", "VocabOptions"),
    ("bert_tf.apps.convert", "ConvertOptions"),
    ("bert_tf.apps.demo", "DemoOptions"),
    ("bert_tf.apps.multiworker", "LaunchOptions"),
    ("bert_tf.apps.data_service", "DataServiceOptions"),
]

# Each app alone in a fresh process, as its command runs it (vocab and convert both name a flag --input, of two
# kinds: a process importing both keeps the last definition).
_DESCRIBE = (
    """
import dataclasses, importlib, json, sys
from bert_tf.apps import common_flags
module = importlib.import_module(sys.argv[1])
flag_values = common_flags.flags.FLAGS
names = common_flags.app_flag_names(module)
print(json.dumps({
    "described": """
    + DESCRIBED_FLAGS
    + """,
    "fields": [f.name for f in dataclasses.fields(getattr(module, sys.argv[2]))],
}))
"""
)


@pytest.fixture(scope="module", params=APPS, ids=[app for app, _ in APPS])
def app_description(request):
    return describe_app(_DESCRIBE, *request.param)


def test_flags_are_the_fields_of_the_app_options(app_description):
    app, described = app_description
    assert sorted(described["described"]) == sorted(described["fields"]), app


def test_generated_flags_are_the_flags_the_app_had(app_description):
    app, described = app_description
    assert_flags_as_recorded(app, described["described"])


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
