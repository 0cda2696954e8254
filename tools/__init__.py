"""Benchmark and maintenance scripts of bert_tf (not part of the installed package; nothing in bert_tf imports them).

Layout:
  tools/NAME.py        one script per measurement or check, run as `python tools/NAME.py` (or `python -m tools.NAME`
                       from the repository root); each says what it measures and how in its docstring
  tools/bench/         the package behind `python tools/benchmark.py`: one module per section, the shared harness
                       (rows, timing policy, markdown and chart), the memory probes registered by name
  tools/references/    the scripts that made the reference outputs under tests/data (run once, in a throwaway
                       environment with torch and transformers; never by the tests)
  machine.py, keras_hub_peer.py, memory_probe.py, udhr_text.py
                       what several scripts share (the machine's name and the local weights, the keras-hub side of
                       the comparisons, a child process's peak RSS, the UDHR samples as text)

Scripts import each other as `tools.NAME` (this folder is a package), never by a bare module name. Run as a file,
a script that imports `tools.*` first puts the repository root at the head of `sys.path` (the two lines that test
`__package__`), so `python tools/NAME.py` and `python -m tools.NAME` import the same modules, from this checkout.
"""
