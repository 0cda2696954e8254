"""bert_tf: the whole BERT life cycle on TensorFlow 2.21 / Keras 3."""

import glob

import setuptools

setuptools.setup(
    name="bert_tf",
    version="0.1.0",
    description="BERT for TensorFlow / Keras 3: vocabulary, pretraining, "
    "checkpoint import, fine-tuning, distributed training and export.",
    license="Apache-2.0",  # LICENSE: the Apache License 2.0, as TensorFlow, tensorflow-text and Keras
    license_files=["LICENSE"],
    packages=setuptools.find_packages(include=["bert_tf", "bert_tf.*"]),
    # Model presets; bert_tf.config finds them beside the checkout or here.
    data_files=[("share/bert_tf/configs", sorted(glob.glob("configs/*.json")))],
    python_requires=">=3.10",
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "keras>=3.15.1,<4",
        "absl-py>=2.1",
        "tensorflow-datasets>=4.9",
        "safetensors>=0.4",
        "huggingface_hub>=0.34",  # Hub ids (org/name[@revision]) read through its cache; its `hf download` CLI
        "tokenizers>=0.19",
        "sentencepiece>=0.2",  # the unigram vocabulary trainer and the .model proto (bert_tf.text.sentencepiece)
        "tensorboard>=2.19",
        "numpy>=1.26",
        "matplotlib>=3.8",  # PNG charts of the report and benchmark tools
    ],
    extras_require={
        # Peers and tools used only by tests and benchmarks.
        "test": [
            "pytest>=8",
            "pytest-xdist>=3.5",
            "keras-hub>=0.32",
            "ruff==0.17.6",
            "tf2onnx>=1.17.0",
            "onnx>=1.23.2",
            "onnxruntime>=1.32.0",
            "ai-edge-litert>=2.3.0",
            "apache-beam==2.77.0",  # tests/beam_test.py: bert_tf.beam on the DirectRunner
            "sentencepiece>=0.2,<0.2.3",  # beside apache-beam: see "beam"
        ],
        # bert_tf.beam and bert-tf-embed --runner=...: Apache Beam's RunInference. Pinned: 2.77.0 is the release
        # checked to install beside tensorflow 2.21. It needs protobuf < 7 (pip takes 6.33.6), and sentencepiece
        # 0.2.3's generated code refuses a protobuf runtime older than 7.36 at import, so 0.2.2 (no such check).
        "beam": ["apache-beam==2.77.0", "sentencepiece>=0.2,<0.2.3"],
        # bert-tf-export --format=onnx: the converter, the format and the runtime that checks and quantizes.
        "onnx": ["tf2onnx>=1.17.0", "onnx>=1.23.2", "onnxruntime>=1.32.0"],
        # Running --format=litert models in Python (the export itself needs only tensorflow and tensorflow-text).
        "litert": ["ai-edge-litert>=2.3.0"],
    },
    entry_points={
        "console_scripts": [
            "bert-tf-convert=bert_tf.apps.convert:run",
            "bert-tf-vocab=bert_tf.apps.vocab:run",
            "bert-tf-pretrain=bert_tf.apps.pretrain:run",
            "bert-tf-finetune=bert_tf.apps.finetune:run",
            "bert-tf-export=bert_tf.apps.export:run",
            "bert-tf-embed=bert_tf.apps.embed:run",
            "bert-tf-distill=bert_tf.apps.distill:run",
            "bert-tf-launch=bert_tf.apps.multiworker:run",
            "bert-tf-data-service=bert_tf.apps.data_service:run",
        ],
    },
)
