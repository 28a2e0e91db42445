"""The ``streamlearn`` command line: thin typer commands over the jobs.

Every option can also come from an environment variable ``STREAMLEARN_<OPTION>`` or a
TOML file (``--config``: top-level keys apply to every command, a ``[learn]`` table to
one command); flags win over the environment, which wins over the file.
"""

from __future__ import annotations

import inspect as introspect
import json
import logging
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer
import typer.main
from typer.core import TyperCommand

from streamlearn import __version__
from streamlearn._kernels import announce_compilation, set_up_target_for_a_command
from streamlearn.config import (
    LearnConfig,
    LearnerSpec,
)
from streamlearn.errors import BadLineError, InvalidParameterError, StreamlearnError
from streamlearn.jobs.learn import LearnReport, load_model, run_learn
from streamlearn.jobs.model import (
    describe,
    evaluate,
    export_buffer,
    export_weights,
    predict_lines,
)
from streamlearn.jobs.rejects import RejectLog
from streamlearn.learn import LEARNERS, LearnerTable
from streamlearn.learn.params import COMMON_PARAMS
from streamlearn.options import (
    ALGORITHM,
    KEYED,
    OUTPUT,
    REPLAY,
    WINDOW,
)
from streamlearn.parse import Rejected
from streamlearn.replay import ReplaySchedule
from streamlearn.settings_options import (
    env_variable,
    made_when_used,
    placeholder,
    seconds,
    settings_from,
    settings_options,
    typer_option,
)
from streamlearn.sources import InputStream

if TYPE_CHECKING:
    from streamlearn.jobs.serve import ServeConfig
    from streamlearn.keyed.settings import KeyedSettings

EXIT_ERROR = 1
EXIT_USAGE = 2
SHOWN_REJECTS = 5

T = TypeVar("T")


def _print_version(show: bool) -> None:
    if show:
        import platform
        from importlib.metadata import version

        print(
            f"streamlearn {__version__} (Python {platform.python_version()}, "
            f"numpy {version('numpy')}, numba {version('numba')})"
        )
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            envvar=env_variable("config"),
            show_envvar=False,
            help="TOML file of option values.",
            metavar="FILE",
            exists=True,
        ),
    ] = None,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the versions and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Large-margin online learning of linear classifiers (PDM, PAUM and relatives)."""
    if config is not None:
        ctx.default_map = _defaults_from_toml(config)


def _command_config(ctx: typer.Context, value: Path | None) -> Path | None:
    """``--config`` given after a command: its option defaults from the file."""
    if value is not None:
        table = _defaults_from_toml(value).get(ctx.info_name or "", {})
        ctx.default_map = {**(ctx.default_map or {}), **table}
    return value


#: the commands a configuration file can set options of (a table each)
CONFIGURED_COMMANDS = ("learn", "serve", "predict", "eval", "inspect")


def _defaults_from_toml(path: Path) -> dict[str, Any]:
    """Each command's option defaults from a TOML file: its top-level keys for every
    command, a command's table for that command. A file that cannot be read or whose
    command entries are not tables is a usage error naming the file."""
    import tomllib

    try:
        with path.open("rb") as handle:
            values = tomllib.load(handle)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc}", param_hint="--config") from None
    shared = {k.replace("-", "_"): v for k, v in values.items() if k not in CONFIGURED_COMMANDS}
    commands = {}
    for command in CONFIGURED_COMMANDS:
        table = values.get(command, {})
        if not isinstance(table, dict):
            raise typer.BadParameter(
                f"{path}: {command} must be a table ([{command}]), got {table!r}",
                param_hint="--config",
            )
        commands[command] = {**shared, **{k.replace("-", "_"): v for k, v in table.items()}}
    return commands


# the help panels are streamlearn.options'; the environment variables are read but not
# listed, which made the help of ``serve`` too wide for 80 columns: the epilog states
# their rule once
EPILOG = (
    "Most options also come from a variable STREAMLEARN_<OPTION> (--replay-every: "
    "STREAMLEARN_REPLAY_EVERY) or a --config file; flags win. Details: docs/cli.md."
)
#: where each learner parameter goes (the others are the algorithms' own: ALGORITHM)
LEARNER_PANELS = {
    "buffer_size": WINDOW,
    "buffer_nnz": WINDOW,
    "forget": WINDOW,
    "seed": REPLAY,
    "max_passes": REPLAY,
    "multiple_updates": REPLAY,
}
#: one line of help for the learner parameters of streamlearn's table (docs/cli.md and
#: docs/algorithms.md say the rest); another table's parameters show their own docs
LEARNER_HELP = {
    "tau": "pam: margin tau >= 0.",
    "tau_neg": "paum: margin asked of negative examples.",
    "tau_pos": "paum: margin asked of positive examples.",
    "lr": "paum: learning rate eta > 0.",
    "beta": "pfm: the fixed margin (no default).",
    "multiple_updates": "Replays add an example k times at once.",
    "eps": "pdm: accuracy in (0, 1]; kozinec: tolerance.",
    "succ_eta": "pdm-succ: divisor of eps between runs.",
    "eps_start": "pdm-succ: the first run's eps.",
    "b": "Margitrons: scale b > 0.",
    "zeta": "Margitrons: exponent zeta in (0, 2).",
    "rho": "Augmentation: x becomes (x, rho).",
    "delta": "Soft margin: a number (0: hard), auto or first.",
    "buffer_size": "Replay buffer capacity in examples.",
    "buffer_nnz": "Replay buffer capacity in nonzeros.",
    "seed": "Seed of the replay orders.",
    "max_passes": "Most passes of one replay.",
    "forget": "Evicted examples leave the model (window) or not.",
}
#: short metavars (typer's own are <integer>, <float>, <text>, <path>)
METAVARS: dict[type, str | None] = {int: "N", float: "X", str: "TEXT", bool: None}
LEARNER_METAVARS = {"delta": "X|auto|first", "forget": "window|never"}


Inputs = Annotated[
    list[Path] | None,
    typer.Argument(
        help="svmlight files, read in order; none or '-': standard input.",
        metavar="[FILE]...",
        show_default=False,
    ),
]
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet",
        "-q",
        envvar=env_variable("quiet"),
        show_envvar=False,
        help="No progress bar, no compile notice.",
        rich_help_panel=OUTPUT,
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


# the learner's own options (``--eps``, ``--tau-pos``, ...) come from the table of
# learners (:func:`learner_options`); these are the job's
Algo = Annotated[str, typer_option("Algorithm.", "algo", panel=ALGORITHM, metavar="NAME")]
Shrink = Annotated[
    bool | None, typer_option("Active sets keep only updated examples.", "shrink", panel=REPLAY)
]
ReplayEvery = Annotated[
    int,
    typer_option("Replay after every N new examples (0: never).", "replay_every", panel=REPLAY,
            metavar="N"),
]  # fmt: skip
ReplayPasses = Annotated[
    int, typer_option("Passes of each replay.", "replay_passes", panel=REPLAY, metavar="N")
]
#: the replay schedule's defaults (``--replay-every``, ``--replay-passes``)
DEFAULT_REPLAY = ReplaySchedule()


def learner_options(learners: LearnerTable) -> list[introspect.Parameter]:
    """One command-line option per parameter of the learners in ``learners`` (each name
    once, in the table's order, then the parameters every learner takes), all None
    unless given. A name several learners take says what it means for each; the names
    of streamlearn's own table have one short line of help instead (:data:`LEARNER_HELP`)."""
    meanings, kinds = _learner_meanings(learners)
    own = meanings if learners is LEARNERS else _learner_meanings(LEARNERS)[0]
    common = {param.name for param in COMMON_PARAMS}
    options = []
    for name, docs in meanings.items():
        if name in LEARNER_HELP and own.get(name) == docs:
            help_text = LEARNER_HELP[name]
        elif name in common:
            help_text = next(iter(docs))
        else:
            help_text = " ".join(f"{', '.join(algos)}: {doc}" for doc, algos in docs.items())
        help_text = help_text.replace("[", "\\[")  # rich would read [x, rho] as markup
        kind = kinds[name]
        flags = [f"--{name.replace('_', '-')}"]
        if kind is bool:
            flags = [f"{flags[0]}/--no-{name.replace('_', '-')}"]
        option = typer_option(
            help_text,
            name,
            *flags,
            panel=LEARNER_PANELS.get(name, ALGORITHM),
            metavar=LEARNER_METAVARS.get(name, METAVARS.get(kind)),
        )
        annotation = Annotated[kind | None, option]  # type: ignore[valid-type]
        keyword = introspect.Parameter.KEYWORD_ONLY
        options.append(introspect.Parameter(name, keyword, default=None, annotation=annotation))
    shrink = introspect.Parameter("shrink", introspect.Parameter.KEYWORD_ONLY, default=None)
    return [*options, shrink.replace(annotation=Shrink)]


def _learner_meanings(
    learners: LearnerTable,
) -> tuple[dict[str, dict[str, list[str]]], dict[str, type]]:
    """Each command-line parameter's docs, with the algorithms that take it in each
    meaning ("" for the parameters every learner takes), and its kind."""
    meanings: dict[str, dict[str, list[str]]] = {}
    kinds: dict[str, type] = {}
    rule_params = [(entry.name, param) for entry in learners.entries() for param in entry.params]
    for algorithm, param in [*rule_params, *(("", param) for param in COMMON_PARAMS)]:
        if not param.cli:
            continue
        kinds[param.name] = param.kind
        meanings.setdefault(param.name, {}).setdefault(param.doc, []).append(algorithm)
    return meanings, kinds


def _command(
    body: Callable[..., None],
    learners: LearnerTable,
    with_options: bool = False,
    declared_options: Callable[[], list[introspect.Parameter]] | None = None,
    order: tuple[str, ...] = (),
) -> Callable[..., None]:
    """``body`` as a typer command of an app over ``learners``: its parameters but
    ``learners`` and ``learner_options`` (which it is called with), and with
    ``with_options`` the learners' options after ``--algo`` (their values go to
    ``learner_options``, with ``--shrink``). ``declared_options`` makes the options that
    ``body`` takes as keywords (its ``**``); ``order`` is the order of the options after
    the learner's (each of them once)."""
    parameters: list[introspect.Parameter] = []
    option_names: list[str] = []
    for param in _own_parameters(body, learners):
        parameters.append(param)
        if param.name == "algo" and with_options:
            generated = learner_options(learners)
            option_names = [option.name for option in generated]
            parameters.extend(generated)
    if declared_options is not None:
        parameters.extend(declared_options())
    if order:
        parameters = _in_order(parameters, len(option_names), order)

    def command(**values: Any) -> None:
        values.pop("config", None)
        extra: dict[str, Any] = {"learners": learners}
        if with_options:
            extra["learner_options"] = {name: values.pop(name, None) for name in option_names}
        body(**values, **extra)

    # --config after the command too (``streamlearn serve --config f.toml``): read first
    # (eager), so that the options after it take their defaults from the file
    parameters.insert(0, introspect.Parameter(
        "config", introspect.Parameter.KEYWORD_ONLY, default=None,
        annotation=Annotated[Path | None, typer.Option(
            "--config", help="TOML file of option values.", metavar="FILE",
            exists=True, is_eager=True, callback=_command_config,
        )],
    ))  # fmt: skip
    command.__name__ = body.__name__
    command.__doc__ = body.__doc__
    command.__signature__ = introspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {param.name: param.annotation for param in parameters}
    return command


def _own_parameters(
    body: Callable[..., None], learners: LearnerTable
) -> list[introspect.Parameter]:
    """``body``'s parameters as a command's keywords, but ``learners``,
    ``learner_options`` and its ``**``; ``--algo`` a choice of ``learners``' names."""
    keyword = introspect.Parameter.KEYWORD_ONLY
    parameters = []
    for param in introspect.signature(body, eval_str=True).parameters.values():
        if param.name in ("learners", "learner_options") or param.kind is param.VAR_KEYWORD:
            continue
        if param.name == "algo":
            # the table's names as a choice: a wrong one is a usage error (exit 2)
            names: Any = Literal.__getitem__(tuple(sorted(learners)))
            algo = Annotated[names, typer_option(
                f"One of {', '.join(sorted(learners))}.", "algo", panel=ALGORITHM, metavar="NAME",
            )]  # fmt: skip
            param = param.replace(annotation=algo)
        parameters.append(param.replace(kind=keyword))
    return parameters


def _in_order(
    parameters: list[introspect.Parameter], learners: int, order: tuple[str, ...]
) -> list[introspect.Parameter]:
    """``parameters`` with those after ``--algo`` and its ``learners`` options in
    ``order``, which must name each of them once (the help lists them so)."""
    start = next(i for i, param in enumerate(parameters) if param.name == "algo") + 1 + learners
    head, rest = parameters[:start], {param.name: param for param in parameters[start:]}
    if sorted(rest) != sorted(order):
        raise ValueError(f"the order does not list these options once: {set(rest) ^ set(order)}")
    return [*head, *(rest[name] for name in order)]


def warmup(*, learners: LearnerTable) -> None:
    """Without kernels compiled at install: compile every kernel into numba's cache."""
    with _errors_to_exit_codes():
        from streamlearn._kernels import uses_aot
        from streamlearn.jobs.warmup import run_warmup

        compiled = run_warmup(_say, learners)
        if uses_aot():
            _say("the kernels were compiled ahead of time, at install: nothing to compile")
        else:
            _say("every kernel is in the cache" if compiled else "every kernel was in the cache")


def make_app(learners: LearnerTable = LEARNERS) -> typer.Typer:
    """The ``streamlearn`` command line over the learners of ``learners`` (their options
    and algorithm names are made from the table)."""
    made = typer.Typer(
        help="Large-margin online learning of linear classifiers (PDM, PAUM and relatives).",
        no_args_is_help=True,
        context_settings={"help_option_names": ["-h", "--help"]},
        pretty_exceptions_enable=False,
    )
    made.callback()(_root)
    learn_options = partial(settings_options, LearnConfig)
    learn_command = _command(learn, learners, True, learn_options, LEARN_ORDER)
    made.command(name="learn", epilog=EPILOG)(learn_command)
    made.command(name="serve", epilog=EPILOG, cls=made_when_used(partial(_serve, learners)))(
        placeholder(serve)
    )
    made.command(name="predict", epilog=EPILOG)(_command(predict, learners))
    made.command(name="eval", epilog=EPILOG)(_command(evaluate_command, learners))
    made.command(name="inspect", epilog=EPILOG)(_command(inspect, learners))
    made.command(name="export", epilog=EPILOG)(_command(export, learners))
    made.command(name="warmup")(_command(warmup, learners))
    return made


def _serve(learners: LearnerTable) -> TyperCommand:
    """The ``serve`` command over ``learners``, its options made from its settings."""
    alone = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    command = _command(serve, learners, True, serve_options, SERVE_ORDER)
    alone.command(name="serve", epilog=EPILOG)(command)
    made = typer.main.get_command(alone)
    assert isinstance(made, TyperCommand)  # an app of one command is that command
    return made


#: learn's options in the order its help lists them (after --algo and the learner's):
#: LearnConfig declares most of them
LEARN_ORDER = (
    "model", "resume", "replay_every", "replay_passes", "converge", "epochs", "max_features",
    "strict", "keep", "one_vs_rest", "max_labels", "max_weights", "tau_pos_kappa", "as_json",
    "quiet",
)  # fmt: skip


def learn(
    *,
    learners: LearnerTable,
    learner_options: dict[str, Any],
    inputs: Inputs = None,
    algo: Algo = "pdm",
    replay_every: ReplayEvery = DEFAULT_REPLAY.every,
    replay_passes: ReplayPasses = DEFAULT_REPLAY.passes,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON.", rich_help_panel=OUTPUT)
    ] = False,
    quiet: Quiet = False,
    **settings: Any,
) -> None:
    """Learn a model from svmlight lines (files or standard input)."""
    with _errors_to_exit_codes():
        config = settings_from(
            LearnConfig,
            settings,
            learner=LearnerSpec.from_options(algo, learner_options, learners),
            inputs=tuple(str(p) for p in inputs or ()),
            replay=ReplaySchedule(every=replay_every, passes=replay_passes),
            max_passes=learner_options.get("max_passes"),
        )
        size = InputStream(config.inputs).size
        with _compile_notice(quiet), _progress(size, quiet) as advance:
            report = run_learn(config, on_bytes=advance, on_reject=_show_reject())
        _print_learn(report, as_json)


#: serve's options in the order its help lists them (after --algo and the learner's): the
#: settings dataclasses declare most of them (:func:`settings_options`)
SERVE_ORDER = (
    "source", "bootstrap_servers", "topic", "group", "consumer_option", "predictions_topic",
    "dead_letter_topic", "labels_topic", "compression", "max_record_bytes", "max_batch_bytes",
    "on_offset_reset", "stall_timeout", "format", "checkpoint_dir", "checkpoint_every",
    "checkpoint_min_interval", "checkpoint_interval", "keep", "metrics_addr", "http_addr",
    "http_learn", "pending_max", "pending_ttl", "http_max_body", "http_nice",
    "drift_threshold", "drift_delta", "hash_features", "idle_replay",
    "replay_every", "replay_passes", "replay_share", "max_features", "one_vs_rest",
    "max_labels", "max_weights", "tau_pos_kappa", "per_label_metrics", "sync_topic", "sync",
    "sync_every", "sync_threshold", "sync_max_interval", "sync_idle_after", "sync_share",
    "member_id", "model_key", "state_topic", "max_models", "max_model_bytes", "key_ttl",
)  # fmt: skip
#: the prefix of the learning group's options (``--sync-every``: ``SyncPolicy.every``)
SYNC_PREFIX = "sync_"


def serve(
    *,
    learners: LearnerTable,
    learner_options: dict[str, Any],
    algo: Algo = "pdm",
    replay_every: Annotated[
        int | None,
        typer_option(
            "Replay every N new examples (default: by time).",
            "replay_every",
            panel=REPLAY,
            metavar="N",
        ),
    ] = None,
    replay_passes: ReplayPasses = DEFAULT_REPLAY.passes,
    model_key: Annotated[
        bool,
        typer_option("One model per message key.", "model_key", panel=KEYED, show_default=False),
    ] = False,
    state_topic: Annotated[
        str | None,
        typer_option(
            "Topic of models that leave memory.", "state_topic", panel=KEYED, metavar="NAME"
        ),
    ] = None,
    max_models: Annotated[
        int | None,
        typer_option("Models in memory at most (1000).", "max_models", panel=KEYED, metavar="N"),
    ] = None,
    max_model_bytes: Annotated[
        int | None,
        typer_option(
            "Bytes of models in memory at most (1 GiB).",
            "max_model_bytes",
            panel=KEYED,
            metavar="N",
        ),
    ] = None,
    key_ttl: Annotated[
        float | None,
        typer_option(
            "Remove a key's model idle this long (7d).",
            "key_ttl",
            panel=KEYED,
            parser=seconds,
            metavar="DURATION",
        ),
    ] = None,
    **settings: Any,
) -> None:
    """Learn continuously from standard input or a Kafka topic, with metrics and checkpoints."""
    with _errors_to_exit_codes():
        from streamlearn.jobs.serve import run_serve

        config = serve_config(
            LearnerSpec.from_options(algo, learner_options, learners),
            settings,
            replay=None
            if replay_every is None
            else ReplaySchedule(every=replay_every, passes=replay_passes),
            keyed=_keyed_settings(model_key, state_topic, max_models, max_model_bytes, key_ttl),
        )
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        logging.getLogger("kafka").setLevel(logging.WARNING)  # its connection chatter
        set_up_target_for_a_command()
        run_serve(config)  # it says itself when its warm-up compiles the kernels


def serve_options() -> list[introspect.Parameter]:
    """The options of ``serve`` that its settings dataclasses declare: ``ServeConfig``'s,
    ``DaemonSettings``' and the learning group's ``SyncPolicy`` (``--sync-<field>``)."""
    from streamlearn.daemon import DaemonSettings
    from streamlearn.group.policy import SyncPolicy
    from streamlearn.jobs.serve import ServeConfig

    return [
        *settings_options(ServeConfig),
        *settings_options(DaemonSettings),
        *settings_options(SyncPolicy, SYNC_PREFIX),
    ]


def serve_config(
    learner: LearnerSpec,
    values: dict[str, Any],
    replay: ReplaySchedule | None,
    keyed: KeyedSettings | None,
) -> ServeConfig:
    """``serve``'s configuration from the values of the options its settings dataclasses
    declare (:func:`serve_options`), the learner and the settings made from other options."""
    from streamlearn.daemon import DaemonSettings
    from streamlearn.group.policy import SyncPolicy
    from streamlearn.jobs.serve import ServeConfig

    daemon = settings_from(DaemonSettings, values, replay=replay)
    sync = settings_from(SyncPolicy, values, SYNC_PREFIX)
    return settings_from(
        ServeConfig, values, learner=learner, settings=daemon, sync=sync, keyed=keyed
    )


def _keyed_settings(
    model_key: bool,
    state_topic: str | None,
    max_models: int | None,
    max_bytes: int | None,
    key_ttl: float | None,
) -> KeyedSettings | None:
    """``--model-key``'s settings (None without it; its options alone are refused)."""
    from streamlearn.keyed.settings import KeyedSettings

    if not model_key:
        given = {"--state-topic": state_topic, "--max-models": max_models,
                 "--max-model-bytes": max_bytes, "--key-ttl": key_ttl}  # fmt: skip
        named = [option for option, value in given.items() if value is not None]
        if named:
            raise InvalidParameterError(f"{', '.join(named)} needs --model-key")
        return None
    defaults = KeyedSettings()
    return KeyedSettings(
        state_topic=state_topic,
        max_models=defaults.max_models if max_models is None else max_models,
        max_model_bytes=defaults.max_model_bytes if max_bytes is None else max_bytes,
        key_ttl=key_ttl,
    )


def predict(
    *,
    learners: LearnerTable,
    inputs: Inputs = None,
    model: Annotated[
        str, typer_option("Model file written by learn.", "model", metavar="FILE")
    ] = "model.ckpt",
    labels: Annotated[
        bool,
        typer.Option("--labels", help="Print +1/-1, not scores (banks: the class)."),
    ] = False,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            help="Banks: sets, class, ranking or scores.",
            metavar="KIND",
        ),
    ] = None,
) -> None:
    """Print one decision value (or label) per example line; bad lines give nan (or 0)."""
    with _errors_to_exit_codes(), _compile_notice():
        learner, _ = load_model(model, learners)
        stream = InputStream([str(p) for p in inputs or ()])
        out = sys.stdout
        lines = predict_lines(learner, stream, labels=labels, output=output, rejects=_quiet_log())
        for line in lines:
            out.write(line + "\n")


def evaluate_command(
    *,
    learners: LearnerTable,
    inputs: Inputs = None,
    model: Annotated[
        str, typer_option("Model file written by learn.", "model", metavar="FILE")
    ] = "model.ckpt",
    as_json: AsJson = False,
) -> None:
    """Accuracy, precision, recall, F1, average precision and AUC on labelled lines."""
    with _errors_to_exit_codes():
        with _compile_notice():
            learner, _ = load_model(model, learners)
            stream = InputStream([str(p) for p in inputs or ()])
            scores = evaluate(learner, stream, rejects=_quiet_log())
        _print_report(scores, as_json)


def inspect(
    *,
    learners: LearnerTable,
    model: Annotated[Path, typer.Argument(help="Model file written by learn.", metavar="FILE")],
    as_json: AsJson = False,
    export_weights_to: Annotated[
        Path | None,
        typer.Option("--export-weights", help="Save coef_ as a .npy file.", metavar="FILE"),
    ] = None,
    export_buffer_to: Annotated[
        Path | None,
        typer.Option(
            "--export-buffer",
            help="Write the replay buffer as svmlight.",
            metavar="FILE",
        ),
    ] = None,
) -> None:
    """Algorithm, parameters, margins and sizes of a model file."""
    with _errors_to_exit_codes():
        details = describe(str(model), learners)
        if export_weights_to is not None or export_buffer_to is not None:
            learner, _ = load_model(str(model), learners)
            if export_weights_to is not None:
                export_weights(learner, str(export_weights_to))
                details["exported_weights"] = str(export_weights_to)
            if export_buffer_to is not None:
                details["exported_buffer_examples"] = export_buffer(learner, str(export_buffer_to))
                details["exported_buffer"] = str(export_buffer_to)
        _print_report(details, as_json)


def export(
    *,
    learners: LearnerTable,
    model: Annotated[Path, typer.Argument(help="Model file written by learn.", metavar="FILE")],
    format: Annotated[
        Literal["json", "onnx"],
        typer.Option("--format", help="json or onnx (docs/export.md).", metavar="FORMAT"),
    ] = "json",
    output: Annotated[
        str,
        typer.Option("--output", "-o", help="File to write; - for stdout.", metavar="FILE"),
    ] = "-",
) -> None:
    """Write a model's weights, intercept, calibration and certificate for other tools."""
    from streamlearn.learn.export import export_json
    from streamlearn.learn.onnx_export import export_onnx

    with _errors_to_exit_codes():
        learner, job = load_model(str(model), learners)
        if format == "onnx":
            data = export_onnx(learner)
        else:
            examples = int(job.get("stream_examples") or 0)
            data = (json.dumps(export_json(learner, examples), allow_nan=False) + "\n").encode()
        if output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        else:
            Path(output).write_bytes(data)


#: the command line over streamlearn's own learners
app = make_app()


def main() -> None:
    """Entry point of the ``streamlearn`` script."""
    app()


# -- output --------------------------------------------------------------------------------


def _say(message: str) -> None:
    """A line on standard error (rich is imported only for the progress bar)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _compile_notice(quiet: bool = False) -> AbstractContextManager[Any]:
    """Say when the kernels are being compiled (the first run after installing spends
    seconds on it before any work shows) and, after the block, how long it took. numba's
    target is set up first, the command's way (:func:`set_up_target_for_a_command`)."""
    set_up_target_for_a_command()
    return nullcontext() if quiet else announce_compilation(_say)


@contextmanager
def _errors_to_exit_codes() -> Iterator[None]:
    try:
        yield
    except BadLineError as exc:
        _say(f"error: {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    except (StreamlearnError, FileNotFoundError, IsADirectoryError) as exc:
        _say(f"error: {exc}")
        raise typer.Exit(EXIT_ERROR) from exc
    except MemoryError as exc:  # e.g. dense weights for a huge index under a raised bound
        _say(f"error: out of memory ({exc or 'no detail'}); lower --max-features or the buffer")
        raise typer.Exit(EXIT_ERROR) from exc


@contextmanager
def _progress(total: int | None, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    if quiet or total is None or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    columns = (BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("learning", total=total)
        yield lambda n: progress.advance(task, n)


def _show_reject() -> Callable[[Rejected], None]:
    shown = 0

    def show(item: Rejected) -> None:
        nonlocal shown
        shown += 1
        if shown <= SHOWN_REJECTS:
            _say(f"line {item.line}: {item.reason}: {item.text!r}")

    return show


def _quiet_log() -> RejectLog:
    return RejectLog(on_reject=_show_reject())


def _print_learn(report: LearnReport, as_json: bool) -> None:
    figures = report.as_dict()
    if report.rejected.total > SHOWN_REJECTS:
        _say(f"... {report.rejected.total} rejected lines in all")
    for warning in report.warnings:
        _say(f"warning: {warning}")
    if as_json:
        print(json.dumps(_json_safe(figures), default=_json_default, allow_nan=False))
        return
    if "per_label" in figures:
        keys: tuple[str, ...] = (
            "examples", "rejected_lines", "labels", "updates", "passes", "converged",
            "worst_certified_gap", "seconds", "model",
        )  # fmt: skip
        _print_report({k: figures[k] for k in (*keys, "per_label")}, as_json=False)
        return
    keys = (
        "examples", "rejected_lines", "updates", "passes", "converged", "margin_achieved",
        "margin_upper_bound", "certified_gap", "seconds",
    )  # fmt: skip
    shown = {k: figures[k] for k in keys}
    _print_mapping({**shown, "model": figures["model"] or "(not saved)"}, as_json=False)


#: columns of the per-label table, in this order when present
LABEL_COLUMNS = (
    "label", "positives", "predicted", "tau_pos", "precision", "recall", "f1",
    "average_precision", "intercept", "updates", "passes", "converged", "margin_achieved",
    "certified_gap", "weight_norm",
)  # fmt: skip


def _print_report(values: dict[str, Any], as_json: bool) -> None:
    """A mapping, then its per-label table and confusion matrix when it has them."""
    if as_json:
        print(json.dumps(_json_safe(values), default=_json_default, allow_nan=False))
        return
    plain = {k: v for k, v in values.items() if k not in ("per_label", "multiclass")}
    multiclass = values.get("multiclass")
    if multiclass is not None:
        plain["multiclass_accuracy"] = multiclass["accuracy"]
    _print_mapping(plain, as_json=False)
    per_label = values.get("per_label")
    if per_label:
        columns = [c for c in LABEL_COLUMNS if c in per_label[0]]
        print()
        _print_table(columns, [[_cell(row[c], c) for c in columns] for row in per_label])
    if multiclass is not None:
        names = [_cell(v, "label") for v in multiclass["labels"]]
        print("\nconfusion matrix (rows: true label, columns: predicted label)")
        matrix = multiclass["confusion_matrix"]
        rows = [[name, *map(str, counts)] for name, counts in zip(names, matrix, strict=True)]
        _print_table(["", *names], rows)


def _print_table(columns: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))


def _cell(value: Any, column: str) -> str:
    if column == "label" and isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


def _print_mapping(values: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(_json_safe(values), default=_json_default, allow_nan=False))
        return
    width = max(len(k) for k in values)
    for key, value in values.items():
        print(f"{key:<{width}}  {_format(value)}")


def _format(value: Any) -> str:
    """A printed value: counts as integers (``65360100``, not ``6.53601e+07``), other
    numbers to 6 significant digits, a missing one as ``-``.

    >>> _format(65360100.0), _format(0.0418298), _format(None), _format(float("nan"))
    ('65360100', '0.0418298', '-', 'nan')
    """
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_format(v)}" for k, v in value.items()) or "-"
    return str(value)


def _json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite float (numpy's too) as None: JSON has no
    such numbers, and ``json.dumps`` would write ``NaN``, which JSON readers refuse.

    >>> _json_safe({"auc": float("nan"), "n": [1.0, float("inf")]})
    {'auc': None, 'n': [1.0, None]}
    """
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if getattr(value, "ndim", None) == 0:  # a numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
