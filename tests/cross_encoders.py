"""The tiny sentence-transformers CrossEncoder folders of `tests/data/cross_encoder/`, rebuilt from their parts.

`tools/references/make_cross_encoder.py` saved each folder with sentence-transformers 6.2 (`CrossEncoder.save`)
and committed only what differs from the shared family checkpoint it started from
(`../shared/reference/families/FAMILY/`):

    tests/data/cross_encoder/NAME/
        rebuild.json     {"family": FAMILY, "family_files": [files copied as they are from the family folder],
                          "tokenizer_json": {top-level entries of the family's tokenizer.json that the folder's
                                             replaces (sentence-transformers saves its `truncation` and `padding`)},
                          "family_tensors": {tensor name in the CrossEncoder: name in the family's weights}}
        head.safetensors the CrossEncoder's other tensors (the new pooler and classifier, seeded)
        *.json           the folder's own small files (modules.json, config.json, config_sentence_transformers.json,
                         sentence_bert_config.json, tokenizer_config.json)

`cross_encoder_folder(name, target)` puts the whole folder back at `target`; the script checks that
`CrossEncoder(rebuilt).predict` equals what the saved folder predicted. NumPy and safetensors only (no torch).
"""

import json
import os
import shutil

from safetensors.numpy import load_file, save_file

DATA = os.path.join(os.path.dirname(__file__), "data", "cross_encoder")
SHARED_FAMILIES = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "reference", "families")
)
REBUILD_FILE = "rebuild.json"
TOKENIZER_JSON = "tokenizer.json"
HEAD_FILE = "head.safetensors"
REFERENCE_FILE = os.path.join(DATA, "reference.json")


def cross_encoder_folder(name, target, data=DATA, families=SHARED_FAMILIES):
    """The CrossEncoder folder `name` rebuilt at `target` (created; it must not exist). Returns `target`."""
    source = os.path.join(data, name)
    with open(os.path.join(source, REBUILD_FILE), encoding="utf-8") as f:
        rebuild = json.load(f)
    family = os.path.join(families, rebuild["family"])
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(REBUILD_FILE, HEAD_FILE))
    for file_name in rebuild["family_files"]:
        shutil.copyfile(os.path.join(family, file_name), os.path.join(target, file_name))
    if rebuild.get("tokenizer_json") is not None:
        with open(os.path.join(family, TOKENIZER_JSON), encoding="utf-8") as f:
            tokenizer = json.load(f)
        with open(os.path.join(target, TOKENIZER_JSON), "w", encoding="utf-8") as f:
            json.dump({**tokenizer, **rebuild["tokenizer_json"]}, f, ensure_ascii=False, indent=2)
    family_tensors = load_file(os.path.join(family, "model.safetensors"))
    tensors = {name: family_tensors[of] for name, of in rebuild["family_tensors"].items()}
    tensors.update(load_file(os.path.join(source, HEAD_FILE)))
    save_file(tensors, os.path.join(target, "model.safetensors"), metadata={"format": "pt"})
    return target


def reference():
    """`tests/data/cross_encoder/reference.json`: the folders' `CrossEncoder.predict` scores (see the script)."""
    with open(REFERENCE_FILE, encoding="utf-8") as f:
        return json.load(f)
