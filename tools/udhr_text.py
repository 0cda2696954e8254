"""The UDHR samples of ../shared/data/multilingual/udhr as text, for the tokenizer benchmarks.

Each file is in the encoding its NLTK corpus name ends with ("German_Deutsch-Latin1", "Arabic_Alarabia-Arabic",
"Greek_Ellinika-UTF8"); `read_lines` decodes it with that encoding (undecodable bytes, such as a character cut at
the sample's end, become U+FFFD) so that every script is measured as the UTF-8 text users have.
"""

import os

# NLTK's UDHR name suffix -> Python codec.
ENCODINGS = {
    "UTF8": "utf-8",
    "Latin1": "latin-1",
    "Latin2": "iso8859-2",
    "Arabic": "cp1256",
    "Cyrillic": "cp1251",
    "Greek": "iso8859-7",
    "Hebrew": "cp1255",
}

# File name prefix -> the script its text is written in (for the tables).
SCRIPTS = {
    "Arabic": "Arabic",
    "Chinese": "Han",
    "English": "Latin (ASCII)",
    "German": "Latin",
    "Greek": "Greek",
    "Hebrew": "Hebrew",
    "Hindi": "Devanagari",
    "Japanese": "Kanji + kana",
    "Korean": "Hangul",
    "Russian": "Cyrillic",
    "Vietnamese": "Latin + diacritics",
}


def encoding_of(path):
    """The codec of a UDHR file, from its name's suffix; ValueError naming the file if unknown."""
    suffix = os.path.basename(path).rsplit("-", 1)[-1]
    if suffix not in ENCODINGS:
        raise ValueError(f"{path}: unknown UDHR encoding suffix {suffix!r} (known: {', '.join(sorted(ENCODINGS))})")
    return ENCODINGS[suffix]


def script_of(path):
    """The script of a UDHR file's text ("-" where not known)."""
    return SCRIPTS.get(os.path.basename(path).split("-")[0].split("_")[0], "-")


def read_lines(path):
    """The file's lines as `str`, decoded with its encoding."""
    with open(path, "rb") as f:
        return f.read().decode(encoding_of(path), errors="replace").split("\n")


def repeated(lines, megabytes):
    """`lines` repeated (whole copies) until their UTF-8 size reaches `megabytes`, at least once."""
    size = sum(len(line.encode("utf-8")) for line in lines) or 1
    copies = max(1, -(-int(megabytes * 1e6) // size))
    return lines * copies


def same_as_reference(ours, reference, lines, batch_size=4096):
    """(lines with HF's ids, lines with HF's ids and character offsets) of `lines` (str): bert_tf's `ours`
    (`tokenize_with_offsets`, character offsets) against HF `tokenizers`' `reference` without special tokens."""
    import tensorflow as tf

    same_ids = same_offsets = 0
    for begin in range(0, len(lines), batch_size):
        batch = lines[begin : begin + batch_size]
        ids, starts, ends = ours.tokenize_with_offsets(tf.constant([t.encode("utf-8") for t in batch]), unit="char")
        theirs = reference.encode_batch(batch, add_special_tokens=False)
        for row_ids, row_starts, row_ends, encoding in zip(ids.to_list(), starts.to_list(), ends.to_list(), theirs):
            same_ids += row_ids == encoding.ids
            same_offsets += row_ids == encoding.ids and list(zip(row_starts, row_ends)) == encoding.offsets
    return same_ids, same_offsets
