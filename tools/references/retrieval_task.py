"""The zero-shot retrieval task on a SQuAD v1.1 file (XQuAD-en), read alike by tools/references/make_retrieval.py,
which records sentence-transformers' results on it, and tests/export/search_retrieval_test.py, which compares
bert_tf's with them: every question of the file is a query; the corpus is the file's distinct paragraphs, id
`TITLE/INDEX` (INDEX: the paragraph's 0-based place in its article; a paragraph seen before keeps its first id);
a question's one relevant passage is its own paragraph. Plain Python: no torch, no TensorFlow."""

import json


def xquad_task(path):
    """`(corpus_ids, corpus_texts, query_ids, query_texts, relevant)` of the SQuAD v1.1 file `path`."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    corpus_ids, corpus_texts, first = [], [], {}
    query_ids, query_texts, relevant = [], [], []
    for article in data:
        for index, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            if context not in first:
                first[context] = f"{article['title']}/{index}"
                corpus_ids.append(first[context])
                corpus_texts.append(context)
            for qa in paragraph["qas"]:
                query_ids.append(qa["id"])
                query_texts.append(qa["question"])
                relevant.append(first[context])
    return corpus_ids, corpus_texts, query_ids, query_texts, relevant
