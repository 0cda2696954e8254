"""The export options, declared once: the serving options groups, each task's own (squad's windows), the export
functions taking them as one object or as keyword arguments, and the default they fall back to named once."""

import dataclasses

import pytest

from bert_tf import options, tasks
from bert_tf.export import export_litert, export_onnx, export_saved_model
from bert_tf.export.options import format_options_class, saved_model_options_class
from bert_tf.serving.options import ServingOptions, options_of
from bert_tf.tasks.squad import SquadOptions, SquadServing
from bert_tf.training import distillation


def _fields(cls):
    return [field.name for field in dataclasses.fields(cls)]


def test_task_serving_options_compose_the_common_groups_and_each_task_s_own():
    composed = tasks.ServingOptions
    assert composed is tasks.serving_options_class()
    assert set(_fields(ServingOptions)) | set(_fields(SquadServing)) <= set(_fields(composed))
    assert tasks.get("squad").serving_options is SquadServing
    assert set(_fields(composed)) < set(_fields(saved_model_options_class()))  # plus the search corpus


def test_squad_serving_options_are_the_recorded_setting_else_the_training_default():
    squad = tasks.get("squad")
    defaults = {name: options.default_of(options.find_field(SquadOptions, name)) for name in _fields(SquadServing)}
    assert squad.served_with(tasks.ServingOptions(), {}).max_answer_length == defaults["max_answer_length"]
    recorded = squad.served_with(tasks.ServingOptions(), {"doc_stride": 7, "max_query_length": 9})
    assert (recorded.doc_stride, recorded.max_query_length) == (7, 9)
    given = squad.served_with(tasks.ServingOptions(doc_stride=5), {"doc_stride": 7})
    assert given.doc_stride == 5
    # The help names the fallback default, declared once in SquadOptions.
    help_text = options.help_of(options.find_field(SquadServing, "max_answer_length"))
    assert f"else {defaults['max_answer_length']})" in help_text


def test_options_of_takes_an_object_and_keyword_arguments():
    cls = saved_model_options_class()
    given = cls(max_seq_length=64, top_k=3)
    merged = options_of(cls, given, {"top_k": 2})
    assert (merged.max_seq_length, merged.top_k) == (64, 2)
    litert = options_of(format_options_class("litert"), given, {"quantize": "float16"})
    assert (litert.max_seq_length, litert.quantize, litert.tokenizer_inside) == (64, "float16", True)
    with pytest.raises(TypeError, match=r"export_saved_model\(\) got unknown options \['max_seq_lenght'\]"):
        options_of(cls, None, {"max_seq_lenght": 3}, "export_saved_model")


@pytest.mark.parametrize("function", [export_saved_model, export_litert, export_onnx])
def test_an_unknown_option_is_refused_before_the_directory_is_read(function, tmp_path):
    with pytest.raises(TypeError, match="got unknown options"):
        function(str(tmp_path / "no_model"), str(tmp_path / "out"), max_seq_lenght=64)
    assert not (tmp_path / "out").exists()


def test_distillation_field_lists_come_from_the_option_groups():
    assert "max_answer_length" in distillation.task_fields() and "tag_scheme" in distillation.task_fields()
    assert "train_file" not in distillation.task_fields() and "max_seq_length" not in distillation.task_fields()
    assert distillation.TASK_FIELDS == distillation.task_fields()
    assert "corpus" not in distillation.CORPUS_FIELDS and "masking_rate" in distillation.CORPUS_FIELDS
