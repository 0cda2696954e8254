"""Make tests/data/embedding_losses.json: sentence-transformers' own loss values on fixed embeddings.

THROWAWAY ENV ONLY. This script imports torch and sentence-transformers, which bert_tf must never depend on: run
it with a separate interpreter (see tools/references/make_family.py), from the repository root:

    ../refenv/bin/python tools/references/make_embedding_loss.py --out tests/data/embedding_losses.json

Embeddings are drawn with a fixed seed (not normalized; one row of every pair/triplet made close to its anchor so
the losses are not all near log(B)). `MultipleNegativesRankingLoss` (defaults: scale 20, cos_sim) and
`CosineSimilarityLoss` (defaults: MSE of cos(a, b) and the score) are called through
`compute_loss_from_embeddings`, the same code their `forward` runs after embedding the texts.
"""

import argparse
import json

import numpy as np
import sentence_transformers
import torch
from sentence_transformers.sentence_transformer import losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rng = np.random.default_rng(18)
    batch, dim = 5, 7
    anchors = rng.normal(size=(batch, dim))
    positives = anchors + 0.8 * rng.normal(size=(batch, dim))
    negatives = anchors + 1.5 * rng.normal(size=(batch, dim))
    scores = rng.uniform(0, 1, size=batch)
    t = [torch.tensor(x, dtype=torch.float64) for x in (anchors, positives, negatives)]
    ranking = losses.MultipleNegativesRankingLoss(model=None)
    cosine = losses.CosineSimilarityLoss(model=None)
    reference = {
        "sentence_transformers": sentence_transformers.__version__,
        "anchors": anchors.tolist(),
        "positives": positives.tolist(),
        "negatives": negatives.tolist(),
        "scores": scores.tolist(),
        "ranking_pairs": float(ranking.compute_loss_from_embeddings(t[:2], None)),
        "ranking_triplets": float(ranking.compute_loss_from_embeddings(t, None)),
        "cosine": float(cosine.compute_loss_from_embeddings(t[:2], torch.tensor(scores))),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
