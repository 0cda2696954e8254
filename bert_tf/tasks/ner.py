"""Named-entity recognition: `BertTokenClassifier`, first-piece labels, conlleval entity scores.

Data: CoNLL column files (`bert_tf.data.tagging`) or `tfds:` names; the best
checkpoint is picked by entity F1; predictions are written to
`predictions.conll` (word, gold tag, predicted tag). Served as entities with
character offsets (`TaggerModule`).
"""

import dataclasses
import functools
import os

from bert_tf import metrics
from bert_tf.checkpoints.name_table import TOKEN_CLASSIFIER_HEADS
from bert_tf.data import tagging, tfds_inputs
from bert_tf.models import BertTokenClassifier
from bert_tf.objectives import Head, Objective
from bert_tf.options import option
from bert_tf.serving import TaggerModule
from bert_tf.tasks import common, registry


@dataclasses.dataclass(kw_only=True)
class NerOptions:
    """The options of named-entity recognition."""

    tag_column: int = option(-1, "NER: the tag column of the CoNLL file.")
    tag_scheme: str = option("auto", "NER: tag scheme of the CoNLL files.", enum=tagging.SCHEMES)


class NerData(common.TaskData):
    """Token classification data: first-piece labels, word-level predictions."""

    def __init__(self, config, tokenizer, max_position_embeddings):
        super().__init__(config, tokenizer, max_position_embeddings)
        self.train = self._read(config.train_file, "train")
        self.label_names = self.train.label_names
        self.eval = self._read(config.eval_file, "validation") if config.eval_file else None
        if self.eval is not None:
            unknown = sorted({t for tags in self.eval.tags for t in tags} - set(self.label_names))
            if unknown:
                raise ValueError(
                    f"{self.eval.path}: tags {unknown} do not occur in the training file "
                    f"{self.train.path} (known: {self.label_names})."
                )
        keep = common.subset(len(self.train), config.max_train_examples, config.seed)
        self.sentences = [self.train.sentences[i] for i in keep]
        self.tags = [self.train.tags[i] for i in keep]

    def _read(self, path, split):
        if tfds_inputs.is_tfds(path):
            name, split = tfds_inputs.parse_spec(path, split)
            return tfds_inputs.load_conll("tfds:" + name, split, data_dir=self.config.tfds_data_dir)
        return tagging.read_conll(path, column=self.config.tag_column, scheme=self.config.tag_scheme)

    @property
    def num_train(self):
        return len(self.sentences)  # an epoch counts sentences; a long one may give several windows

    def train_dataset(self, context, global_batch_size):
        dataset = common.training_dataset(
            tagging.make_dataset,
            (self.sentences, self.tags),
            self.tokenizer,
            self.config,
            context,
            global_batch_size,
            label_names=self.label_names,
            max_position_embeddings=self.max_position_embeddings,
            drop_remainder=True,
        )
        return dataset.map(lambda f, y, w: common.trim_batch((f, {"logits": y}, {"logits": w})))

    @functools.cached_property
    def _eval_batches(self):
        """The evaluation windows and their word index, built once for every evaluation of the run."""
        return tagging.make_dataset(
            self.eval.sentences,
            None,
            self.tokenizer,
            self.label_names,
            self.config.max_seq_length,
            self.config.eval_batch_size,
            max_position_embeddings=self.max_position_embeddings,
            with_word_index=True,
        )

    def evaluate(self, model):
        dataset = self._eval_batches
        logits = common.predict(model, dataset.map(lambda features, word_index: features), sequence_keys=("logits",))
        index = [{k: v.numpy() for k, v in word_index.items()} for _, word_index in dataset]
        predicted = tagging.word_predictions(
            logits["logits"], index, self.label_names, num_words=[len(s) for s in self.eval.sentences]
        )
        predicted = [[tag or "O" for tag in tags] for tags in predicted]
        results = metrics.conll_metrics(self.eval.tags, predicted)
        results.pop("per_type", None)

        def write(directory):  # conlleval input: word gold predicted
            with open(os.path.join(directory, "predictions.conll"), "w", encoding="utf-8") as f:
                for words, gold, guess in zip(self.eval.sentences, self.eval.tags, predicted):
                    f.writelines(f"{w} {g} {p}\n" for w, g, p in zip(words, gold, guess))
                    f.write("\n")

        return results, write


NER = registry.register(
    registry.Task(
        name="ner",
        build_model=lambda encoder, label_names, **options: BertTokenClassifier(
            encoder, num_classes=len(label_names), dropout=encoder.dropout, **options
        ),
        heads=TOKEN_CLASSIFIER_HEADS,
        objective=Objective([Head("logits", "", "ce")]),
        best_metric="f1",
        needs_labels=True,
        data=NerData,
        serving_class=TaggerModule,
        serving_module=lambda model, tokenizer, max_seq_length, label_names, options: TaggerModule(
            model, tokenizer, max_seq_length, label_names, max_input_bytes=options.max_input_bytes
        ),
        distillable=True,
        options=NerOptions,
    )
)
