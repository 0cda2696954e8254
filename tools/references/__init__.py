"""The scripts that made the reference outputs under tests/data, from torch, transformers and sentence-transformers.

Run once, in a throwaway environment (e.g. ../refenv) that has those libraries, from the repository root, as
`../refenv/bin/python tools/references/NAME.py ...` (each docstring gives its command); bert_tf and its tests never
import them, nor depend on those libraries.

  make_family.py         BERT/RoBERTa/DistilBERT/ELECTRA task heads (tests/data/families/)
  make_albert.py         ALBERT task heads and layer groups (tests/data/families/albert-*)
  make_deberta.py        DeBERTa-v2/v3 references (tests/data/deberta/)
  make_sentencepiece.py  SentencePiece models and their Hugging Face tokenizers (tests/data/sentencepiece/)
  make_st.py             sentence-transformers embeddings (tests/data/sentence_transformers/)
  make_retrieval.py      sentence-transformers retrieval scores on XQuAD (tests/data/sentence_transformers/)
  make_embedding_loss.py sentence-transformers losses (tests/data/embedding_losses.json)
  check_hf_roundtrip.py  loads bert_tf's Hugging Face exports with transformers against those references
"""
