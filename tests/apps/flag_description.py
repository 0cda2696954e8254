"""What the flag tests read of an app's flags: each app described alone in a fresh process, as its bert-tf-*
command runs it (a process importing two apps keeps one definition of a flag name they share), and compared with
`app_flags.json`, the flags as they were defined by hand (a flag changed on purpose changes that file too)."""

import json
import os
import subprocess

from tests.launcher import python_command

# Python source of an expression, for a script that has bound `flag_values` (absl's FLAGS) and `names` (the app's
# flag names): each flag as `app_flags.json` records it.
DESCRIBED_FLAGS = """{
    name: {
        "parser": type(flag_values[name].parser).__name__,
        "default": flag_values[name].default,
        "help": flag_values[name].help,
        "lower_bound": getattr(flag_values[name].parser, "lower_bound", None),
        "upper_bound": getattr(flag_values[name].parser, "upper_bound", None),
        "enum": list(getattr(flag_values[name].parser, "enum_values", None) or []) or None,
    }
    for name in names
}"""


def describe_app(script, module, config_class):
    """`(module, description)`: the JSON the last line of `script` prints, run as `python -c script module
    config_class` in a fresh process."""
    result = subprocess.run(
        python_command("-c", script, module, config_class), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return module, json.loads(result.stdout.strip().splitlines()[-1])


def assert_flags_as_recorded(app, described):
    """The flags of `app` (`described`: flag name -> DESCRIBED_FLAGS's entry) are those `app_flags.json` records."""
    with open(os.path.join(os.path.dirname(__file__), "app_flags.json"), encoding="utf-8") as f:
        before = json.load(f)[app]
    assert sorted(described) == sorted(before), app
    differ = {
        name: {key: (before[name][key], value) for key, value in flag.items() if before[name][key] != value}
        for name, flag in described.items()
    }
    assert {name: d for name, d in differ.items() if d} == {}, f"{app}: name: {{what: (before, now)}}"
