"""The package behind `python tools/benchmark.py` (what it measures and its flags: that script's docstring).

  main.py      runs the sections named by --sections in RUN_ORDER, prints and writes the table and chart
  options.py   the flags, and what several sections read from them (SST-2 sentences, the MiniLM folder)
  harness.py   the Row, the timing policy (alternating repeats, medians), the markdown table and chart; no flags,
               so other tools time with it too
  work.py      the work both sides run: model shapes and builders, the random batch, the shared training step
  peak.py, train.py, infer.py, serve.py, embed.py, albert.py, text.py, deberta.py, xlmr.py, memory.py, tta.py
               one module per section: `<section>_rows(...)` -> rows, and the memory probes of its rows' work
  probes.py    the probe kinds registered by name (`--probe=SPEC` runs one in a fresh process)
  peak_rss.py  the parent's side of the peak-RSS column: each row's probes, run and read

A new section is a module with its rows function, one entry in `options.SECTIONS` and one in `main.RUNS`; a new
probe kind is a function in its section's module and one entry in `probes.PROBES`.
"""
