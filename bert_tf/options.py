"""Run options declared once: a dataclass field per option, with its default, help text, bounds and choices.

    @dataclasses.dataclass(kw_only=True)
    class SquadOptions:
        doc_stride: int = option(128, "QA: context tokens between window starts.", lower_bound=1)

An option is a `dataclasses.field` whose metadata carries what a command line
needs: `help`, `lower_bound`/`upper_bound` and `enum` (a tuple of choices, or
a function returning them, for lists that grow, e.g. the registered task
names). The field's type says the flag's kind: `bool`, `int`, `float`, `list`
(comma-separated), `str` or `object` (a string the reader parses, e.g. a
column name or index); an `enum` makes a choice flag.

Option groups are small `kw_only` dataclasses (the optimizer, the task data,
a task's own options, ...). A run config (`PretrainConfig`, `FinetuneConfig`,
`DistillConfig`, `EmbedConfig`) inherits the groups it reads, so each field
is still a plain attribute (`config.doc_stride`) and a keyword argument
(`FinetuneConfig(doc_stride=64, ...)`). Where one run reads an option with
another default or help than its group's, the config redeclares it with
`override(Group, "name", default=...)`, which keeps the rest of the
declaration. `compose` joins groups into a config class when the groups are
only known at run time (the options of the registered tasks).

`bert_tf.apps.common_flags` makes absl flags from these fields; this module
imports neither absl nor TensorFlow.
"""

import dataclasses

# The metadata keys of an option (besides them, a field's metadata is free for other uses).
HELP = "help"
LOWER_BOUND = "lower_bound"
UPPER_BOUND = "upper_bound"
ENUM = "enum"


def option(default=dataclasses.MISSING, help="", *, default_factory=dataclasses.MISSING, **bounds):
    """A dataclass field declaring one option: its default (or `default_factory`), help text and, in `bounds`,
    `lower_bound`, `upper_bound` and `enum` (choices: a tuple, or a function returning them). Without a default
    the option is required (the flag's default is then None)."""
    unknown = set(bounds) - {LOWER_BOUND, UPPER_BOUND, ENUM}
    if unknown:
        raise TypeError(f"option() takes lower_bound, upper_bound and enum. Received: {sorted(unknown)}")
    metadata = {HELP: help, **{key: value for key, value in bounds.items() if value is not None}}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def find_field(group, name):
    """The `dataclasses.Field` named `name` of the dataclass `group`; ValueError naming the known ones."""
    for field in dataclasses.fields(group):
        if field.name == name:
            return field
    known = [field.name for field in dataclasses.fields(group)]
    raise ValueError(f"{group.__name__} has no option {name!r}. Known: {known}")


def override(group, name, **changes):
    """The option `name` of `group` as another run reads it: `changes` replace its `default` (or
    `default_factory`), `help`, `lower_bound`, `upper_bound` or `enum` (None removes a bound); the rest of the
    declaration is kept. Assign it to the same name in the config class that inherits `group`."""
    return _changed(find_field(group, name), changes)


def _changed(field, changes):
    changes = dict(changes)
    metadata = dict(field.metadata)
    default, factory = field.default, field.default_factory
    if "default" in changes:
        default, factory = changes.pop("default"), dataclasses.MISSING
    if "default_factory" in changes:
        default, factory = dataclasses.MISSING, changes.pop("default_factory")
    for key, value in changes.items():
        if key not in (HELP, LOWER_BOUND, UPPER_BOUND, ENUM):
            raise TypeError(f"override() changes default, help, lower_bound, upper_bound or enum. Received: {key}")
        if value is None:
            metadata.pop(key, None)
        else:
            metadata[key] = value
    return dataclasses.field(default=default, default_factory=factory, metadata=metadata)


def help_of(field):
    """The help text of an option field."""
    return field.metadata.get(HELP, "")


def choices(field):
    """The choices of an enum option (its `enum`, called when it is a function), or None."""
    values = field.metadata.get(ENUM)
    return tuple(values()) if callable(values) else (tuple(values) if values is not None else None)


def default_of(field):
    """The field's default value (a fresh one from its factory), or None for a required option."""
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def lower_bounds(config_class):
    """`{name: lower bound}` of the options of `config_class` that have one."""
    return {
        field.name: field.metadata[LOWER_BOUND]
        for field in dataclasses.fields(config_class)
        if LOWER_BOUND in field.metadata
    }


_COMPOSED = {}


def _check_one_declaration(name, groups):
    """ValueError when two of `groups` after the first declare an option of the same name differently (the
    first group, the run's own options, may redeclare any)."""
    own = {field.name for field in dataclasses.fields(groups[0])} if dataclasses.is_dataclass(groups[0]) else set()
    declared = {}
    for group in groups[1:]:
        for field in dataclasses.fields(group):
            if field.name in own:
                continue
            first = declared.setdefault(field.name, (group, field))
            if first[1] is not field:
                raise ValueError(
                    f"{name}: the option {field.name!r} is declared twice, by {first[0].__name__} and "
                    f"{group.__name__}; declare it once, in a class both inherit."
                )


def compose(name, groups, overrides=None, module=None, doc=None):
    """A `kw_only` dataclass named `name` that inherits the option groups `groups` (a field several of them
    declare comes from the first, as in any class hierarchy), with `overrides` (`{option name: changes}`, as
    `override` takes them) applied to the inherited options it has. The same arguments give the same class."""
    groups = tuple(dict.fromkeys(groups))  # a group listed twice (two tasks sharing one) is inherited once
    overrides = overrides or {}
    key = (name, groups, tuple((n, tuple(sorted(c.items()))) for n, c in sorted(overrides.items())), module)
    if key not in _COMPOSED:
        _check_one_declaration(name, groups)
        namespace = {"__doc__": doc, "__annotations__": {}}
        if module is not None:
            namespace["__module__"] = module
        mro = type(f"_{name}", groups, {}).__mro__
        for option_name, changes in overrides.items():
            holder = next((c for c in mro if option_name in getattr(c, "__dataclass_fields__", {})), None)
            if holder is None:
                continue  # the option of a task not registered now
            field = holder.__dataclass_fields__[option_name]
            namespace["__annotations__"][option_name] = field.type
            namespace[option_name] = _changed(field, changes)
        _COMPOSED[key] = dataclasses.dataclass(kw_only=True)(type(name, groups, namespace))
    return _COMPOSED[key]
