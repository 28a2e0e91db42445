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
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import typer

from streamlearn import __version__
from streamlearn._kernels import announce_compilation, set_up_target_for_a_command
from streamlearn.config import (
    DEFAULT_HTTP_ADDR,
    DEFAULT_HTTP_MAX_BODY,
    DEFAULT_HTTP_NICE,
    DEFAULT_MAX_FEATURES,
    DEFAULT_MAX_LABELS,
    DEFAULT_MAX_WEIGHTS,
    LearnConfig,
    LearnerSpec,
)
from streamlearn.drift import DEFAULT_DELTA, DEFAULT_THRESHOLD
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
from streamlearn.parse import Rejected
from streamlearn.replay import ReplaySchedule
from streamlearn.sources import InputStream
from streamlearn.sources.kafka_codecs import DEFAULT_MAX_BATCH_BYTES, DEFAULT_MAX_RECORD_BYTES

if TYPE_CHECKING:
    from streamlearn.keyed.settings import KeyedSettings

EXIT_ERROR = 1
EXIT_USAGE = 2
SHOWN_REJECTS = 5

T = TypeVar("T")


def _env(name: str) -> str:
    return "STREAMLEARN_" + name.upper().replace("-", "_")


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
            envvar=_env("config"),
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


# the help panels: each option in one, with one short line of help (docs/cli.md has the
# long text); the environment variables are read but not listed, which made the help of
# ``serve`` too wide for 80 columns: the epilog states their rule once
ALGORITHM = "Algorithm"
REPLAY = "Replay"
WINDOW = "Replay buffer"
INPUT = "Input"
ONE_VS_REST = "One-vs-rest"
OUTPUT = "Output"
KAFKA = "Kafka"
CHECKPOINTS = "Checkpoints"
HTTP = "HTTP and metrics"
GROUP = "Learning group"
KEYED = "Keyed models"
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


def _option(help_text: str, name: str, *flags: str, panel: str | None = None, **kwargs: Any) -> Any:
    return typer.Option(
        *flags,
        help=help_text,
        envvar=_env(name),
        show_envvar=False,
        rich_help_panel=panel,
        **kwargs,
    )


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
        envvar=_env("quiet"),
        show_envvar=False,
        help="No progress bar, no compile notice.",
        rich_help_panel=OUTPUT,
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


# the learner's own options (``--eps``, ``--tau-pos``, ...) come from the table of
# learners (:func:`learner_options`); these are the job's
Algo = Annotated[str, _option("Algorithm.", "algo", panel=ALGORITHM, metavar="NAME")]
Shrink = Annotated[
    bool | None, _option("Active sets keep only updated examples.", "shrink", panel=REPLAY)
]
ReplayEvery = Annotated[
    int,
    _option("Replay after every N new examples (0: never).", "replay_every", panel=REPLAY,
            metavar="N"),
]  # fmt: skip
ReplayPasses = Annotated[
    int, _option("Passes of each replay.", "replay_passes", panel=REPLAY, metavar="N")
]
MaxFeatures = Annotated[
    int,
    _option("Reject lines with larger indices.", "max_features", panel=INPUT, metavar="N"),
]
MaxLabels = Annotated[
    int, _option("Reject lines that bring more labels.", "max_labels", panel=ONE_VS_REST,
                 metavar="N"),
]  # fmt: skip
MaxWeights = Annotated[
    int,
    _option("Reject lines that make labels x features larger.", "max_weights",
            panel=ONE_VS_REST, metavar="N"),
]  # fmt: skip
OneVsRest = Annotated[
    bool,
    _option("One binary learner per label.", "one_vs_rest", panel=ONE_VS_REST, show_default=False),
]
TauPosKappa = Annotated[
    float | None,
    _option("PAUM: tau_pos per label by its rarity.", "tau_pos_kappa", panel=ONE_VS_REST,
            metavar="K"),
]  # fmt: skip


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
        option = _option(
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
    body: Callable[..., None], learners: LearnerTable, with_options: bool = False
) -> Callable[..., None]:
    """``body`` as a typer command of an app over ``learners``: its parameters but
    ``learners`` and ``learner_options`` (which it is called with), and with
    ``with_options`` the learners' options after ``--algo`` (their values go to
    ``learner_options``, with ``--shrink``)."""
    own = introspect.signature(body, eval_str=True).parameters.values()
    keyword = introspect.Parameter.KEYWORD_ONLY
    parameters: list[introspect.Parameter] = []
    option_names: list[str] = []
    for param in own:
        if param.name in ("learners", "learner_options"):
            continue
        if param.name == "algo":
            # the table's names as a choice: a wrong one is a usage error (exit 2)
            names: Any = Literal.__getitem__(tuple(sorted(learners)))
            algo = Annotated[names, _option(
                f"One of {', '.join(sorted(learners))}.", "algo", panel=ALGORITHM, metavar="NAME",
            )]  # fmt: skip
            parameters.append(param.replace(kind=keyword, annotation=algo))
            if with_options:
                generated = learner_options(learners)
                option_names = [option.name for option in generated]
                parameters.extend(generated)
            continue
        parameters.append(param.replace(kind=keyword))

    # --config after the command too (``streamlearn serve --config f.toml``): read first
    # (eager), so that the options after it take their defaults from the file
    parameters.insert(0, introspect.Parameter(
        "config", keyword, default=None,
        annotation=Annotated[Path | None, typer.Option(
            "--config", help="TOML file of option values.", metavar="FILE",
            exists=True, is_eager=True, callback=_command_config,
        )],
    ))  # fmt: skip

    def command(**values: Any) -> None:
        values.pop("config", None)
        extra: dict[str, Any] = {"learners": learners}
        if with_options:
            extra["learner_options"] = {name: values.pop(name, None) for name in option_names}
        body(**values, **extra)

    command.__name__ = body.__name__
    command.__doc__ = body.__doc__
    command.__signature__ = introspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {param.name: param.annotation for param in parameters}
    return command


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
    made.command(name="learn", epilog=EPILOG)(_command(learn, learners, with_options=True))
    made.command(name="serve", epilog=EPILOG)(_command(serve, learners, with_options=True))
    made.command(name="predict", epilog=EPILOG)(_command(predict, learners))
    made.command(name="eval", epilog=EPILOG)(_command(evaluate_command, learners))
    made.command(name="inspect", epilog=EPILOG)(_command(inspect, learners))
    made.command(name="export", epilog=EPILOG)(_command(export, learners))
    made.command(name="warmup")(_command(warmup, learners))
    return made


def learn(
    *,
    learners: LearnerTable,
    learner_options: dict[str, Any],
    inputs: Inputs = None,
    algo: Algo = "pdm",
    model: Annotated[
        str | None, _option("Write the model here.", "model", panel=OUTPUT, metavar="FILE")
    ] = None,
    resume: Annotated[
        str | None,
        _option("Continue from this model file.", "resume", panel=OUTPUT, metavar="FILE"),
    ] = None,
    replay_every: ReplayEvery = 10_000,
    replay_passes: ReplayPasses = 1,
    converge: Annotated[
        bool, _option("Replay to convergence at the end.", "converge", panel=REPLAY)
    ] = True,
    epochs: Annotated[
        int | None,
        _option("N plain passes instead of replay.", "epochs", panel=REPLAY, metavar="N"),
    ] = None,
    max_features: MaxFeatures = DEFAULT_MAX_FEATURES,
    strict: Annotated[
        bool,
        _option("Stop at the first bad line (exit 2).", "strict", panel=INPUT, show_default=False),
    ] = False,
    keep: Annotated[
        int, _option("Model files to keep (m.ckpt.1, ...).", "keep", panel=OUTPUT, metavar="N")
    ] = 1,
    one_vs_rest: OneVsRest = False,
    max_labels: MaxLabels = DEFAULT_MAX_LABELS,
    max_weights: MaxWeights = DEFAULT_MAX_WEIGHTS,
    tau_pos_kappa: TauPosKappa = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the result as JSON.", rich_help_panel=OUTPUT)
    ] = False,
    quiet: Quiet = False,
) -> None:
    """Learn a model from svmlight lines (files or standard input)."""
    with _errors_to_exit_codes():
        config = LearnConfig(
            learner=LearnerSpec.from_options(algo, learner_options, learners),
            inputs=tuple(str(p) for p in inputs or ()),
            model=model,
            resume=resume,
            replay=ReplaySchedule(every=replay_every, passes=replay_passes),
            converge=converge,
            max_passes=learner_options.get("max_passes"),
            epochs=epochs,
            max_features=max_features,
            strict=strict,
            keep=keep,
            one_vs_rest=one_vs_rest,
            max_labels=max_labels,
            max_weights=max_weights,
            tau_pos_kappa=tau_pos_kappa,
        )
        size = InputStream(config.inputs).size
        with _compile_notice(quiet), _progress(size, quiet) as advance:
            report = run_learn(config, on_bytes=advance, on_reject=_show_reject())
        _print_learn(report, as_json)


def serve(
    *,
    learners: LearnerTable,
    learner_options: dict[str, Any],
    algo: Algo = "pdm",
    source: Annotated[
        Literal["stdin", "kafka"],
        _option("Where examples come from.", "source", panel=INPUT, metavar="stdin|kafka"),
    ] = "stdin",
    bootstrap_servers: Annotated[
        str | None,
        _option("Brokers, host:port,host:port.", "bootstrap_servers", panel=KAFKA, metavar="HOSTS"),
    ] = None,
    topic: Annotated[
        str | None, _option("Topic of the examples.", "topic", panel=KAFKA, metavar="NAME")
    ] = None,
    group: Annotated[
        str, _option("Consumer group.", "group", panel=KAFKA, metavar="NAME")
    ] = "streamlearn",
    consumer_option: Annotated[
        list[str] | None,
        _option(
            "Consumer option NAME=VALUE, repeatable.",
            "consumer_option",
            "--consumer-option",
            panel=KAFKA,
            metavar="K=V",
        ),
    ] = None,
    predictions_topic: Annotated[
        str | None,
        _option(
            "Topic of predictions (stdin: stdout).",
            "predictions_topic",
            panel=KAFKA,
            metavar="NAME",
        ),
    ] = None,
    dead_letter_topic: Annotated[
        str | None,
        _option(
            "Topic of rejected or unreadable messages.",
            "dead_letter_topic",
            panel=KAFKA,
            metavar="NAME",
        ),
    ] = None,
    compression: Annotated[
        Literal["none", "gzip", "snappy", "lz4", "zstd"],
        _option(
            "Of what serve writes: none, gzip, snappy, lz4, zstd.",
            "compression",
            panel=KAFKA,
            metavar="CODEC",
        ),
    ] = "none",
    max_record_bytes: Annotated[
        int,
        _option(
            "Skip larger messages as unreadable.", "max_record_bytes", panel=KAFKA, metavar="N"
        ),
    ] = DEFAULT_MAX_RECORD_BYTES,
    max_batch_bytes: Annotated[
        int,
        _option(
            "Skip batches that decompress to more.", "max_batch_bytes", panel=KAFKA, metavar="N"
        ),
    ] = DEFAULT_MAX_BATCH_BYTES,
    on_offset_reset: Annotated[
        Literal["wait", "earliest"],
        _option(
            "A log that went back: hold it, or relearn it.",
            "on_offset_reset",
            panel=KAFKA,
            metavar="wait|earliest",
        ),
    ] = "wait",
    stall_timeout: Annotated[
        float,
        _option(
            "No progress this long turns /readyz false.",
            "stall_timeout",
            panel=KAFKA,
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "60s",  # type: ignore[assignment]  # the parser makes it seconds
    drift_threshold: Annotated[
        float,
        _option(
            "Page-Hinkley alarm level of the error; 0: off.",
            "drift_threshold",
            panel=HTTP,
            metavar="H",
        ),
    ] = DEFAULT_THRESHOLD,
    drift_delta: Annotated[
        float,
        _option("Its tolerance of the error's rise.", "drift_delta", panel=HTTP, metavar="D"),
    ] = DEFAULT_DELTA,
    message_format: Annotated[
        Literal["svmlight", "msgpack", "json"],
        _option(
            "Messages without a content type: svmlight, msgpack, json.",
            "format",
            "--format",
            panel=KAFKA,
            metavar="FORMAT",
        ),
    ] = "svmlight",
    checkpoint_dir: Annotated[
        str | None,
        _option(
            "Directory of checkpoints (none: none).",
            "checkpoint_dir",
            panel=CHECKPOINTS,
            metavar="DIR",
        ),
    ] = None,
    checkpoint_every: Annotated[
        int | None,
        _option(
            "Checkpoint after N new examples too.",
            "checkpoint_every",
            panel=CHECKPOINTS,
            metavar="N",
        ),
    ] = None,
    checkpoint_min_interval: Annotated[
        float,
        _option(
            "Least time between two by --checkpoint-every.",
            "checkpoint_min_interval",
            panel=CHECKPOINTS,
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "5s",  # type: ignore[assignment]  # the parser makes it seconds
    checkpoint_interval: Annotated[
        float,
        _option(
            "Checkpoint after this long (30s, 5m, 1h).",
            "checkpoint_interval",
            panel=CHECKPOINTS,
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "30s",  # type: ignore[assignment]  # the parser makes it seconds
    keep: Annotated[
        int, _option("Checkpoints to keep.", "keep", panel=CHECKPOINTS, metavar="N")
    ] = 3,
    metrics_addr: Annotated[
        str,
        _option("Of /metrics, /healthz, /readyz.", "metrics_addr", panel=HTTP, metavar="HOST:PORT"),
    ] = "127.0.0.1:9108",
    http_addr: Annotated[
        str,
        _option(
            "Of the HTTP API, or off (a token off loopback).",
            "http_addr",
            panel=HTTP,
            metavar="HOST:PORT",
        ),
    ] = DEFAULT_HTTP_ADDR,
    http_learn: Annotated[
        bool,
        _option("Learn what is POSTed to /learn.", "http_learn", panel=HTTP, show_default=False),
    ] = False,
    http_max_body: Annotated[
        int,
        _option("Bytes of the largest request body.", "http_max_body", panel=HTTP, metavar="N"),
    ] = DEFAULT_HTTP_MAX_BODY,
    http_nice: Annotated[
        int,
        _option(
            "Nice steps of the HTTP thread below learning.", "http_nice", panel=HTTP, metavar="N"
        ),
    ] = DEFAULT_HTTP_NICE,
    hash_features: Annotated[
        int | None,
        _option("JSON feature names hash to N indices.", "hash_features", panel=INPUT, metavar="N"),
    ] = None,
    idle_replay: Annotated[
        Literal["on", "off"],
        _option("Replay while the source is idle.", "idle_replay", panel=INPUT, metavar="on|off"),
    ] = "on",
    replay_every: Annotated[
        int | None,
        _option(
            "Replay every N new examples (default: by time).",
            "replay_every",
            panel=REPLAY,
            metavar="N",
        ),
    ] = None,
    replay_passes: ReplayPasses = 1,
    replay_share: Annotated[
        float,
        _option("Share of time replaying while behind.", "replay_share", panel=REPLAY, metavar="X"),
    ] = 0.2,
    max_features: MaxFeatures = DEFAULT_MAX_FEATURES,
    one_vs_rest: OneVsRest = False,
    max_labels: MaxLabels = DEFAULT_MAX_LABELS,
    max_weights: MaxWeights = DEFAULT_MAX_WEIGHTS,
    tau_pos_kappa: TauPosKappa = None,
    per_label_metrics: Annotated[
        bool,
        _option(
            "Per-label series too.", "per_label_metrics", panel=ONE_VS_REST, show_default=False
        ),
    ] = False,
    sync_topic: Annotated[
        str | None,
        _option(
            "Join the group that syncs on this topic.", "sync_topic", panel=GROUP, metavar="NAME"
        ),
    ] = None,
    sync: Annotated[
        Literal["dynamic", "periodic"],
        _option(
            "Publish on drift, or every --sync-every.",
            "sync",
            panel=GROUP,
            metavar="dynamic|periodic",
        ),
    ] = "dynamic",
    sync_every: Annotated[
        int,
        _option("Examples between checks or publications.", "sync_every", panel=GROUP, metavar="N"),
    ] = 1000,
    sync_threshold: Annotated[
        float,
        _option(
            "Dynamic: the drift, a share of ||model||.", "sync_threshold", panel=GROUP, metavar="X"
        ),
    ] = 0.6,
    sync_max_interval: Annotated[
        float,
        _option(
            "Publish at least this often.",
            "sync_max_interval",
            panel=GROUP,
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "60s",  # type: ignore[assignment]  # the parser makes it seconds
    sync_idle_after: Annotated[
        float,
        _option(
            "Publish once the stream is idle this long.",
            "sync_idle_after",
            panel=GROUP,
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "1s",  # type: ignore[assignment]  # the parser makes it seconds
    sync_share: Annotated[
        float,
        _option("Most of its time spent publishing.", "sync_share", panel=GROUP, metavar="X"),
    ] = 0.1,
    member_id: Annotated[
        str | None,
        _option("Id in the group (host-pid-random).", "member_id", panel=GROUP, metavar="ID"),
    ] = None,
    model_key: Annotated[
        bool,
        _option(
            "One model per message key.",
            "model_key",
            panel=KEYED,
            show_default=False,
        ),
    ] = False,
    state_topic: Annotated[
        str | None,
        _option("Topic of models that leave memory.", "state_topic", panel=KEYED, metavar="NAME"),
    ] = None,
    max_models: Annotated[
        int | None,
        _option("Models in memory at most (1000).", "max_models", panel=KEYED, metavar="N"),
    ] = None,
    max_model_bytes: Annotated[
        int | None,
        _option(
            "Bytes of models in memory at most (1 GiB).",
            "max_model_bytes",
            panel=KEYED,
            metavar="N",
        ),
    ] = None,
    key_ttl: Annotated[
        float | None,
        _option(
            "Remove a key's model idle this long (7d).",
            "key_ttl",
            panel=KEYED,
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = None,
) -> None:
    """Learn continuously from standard input or a Kafka topic, with metrics and checkpoints."""
    with _errors_to_exit_codes():
        from streamlearn.daemon import DaemonSettings
        from streamlearn.group.policy import SyncPolicy
        from streamlearn.jobs.serve import ServeConfig, run_serve

        settings = DaemonSettings(
            replay=None
            if replay_every is None
            else ReplaySchedule(every=replay_every, passes=replay_passes),
            replay_share=replay_share,
            checkpoint_every=checkpoint_every,
            checkpoint_min_interval=checkpoint_min_interval,
            checkpoint_interval=checkpoint_interval,
            idle_replay=idle_replay == "on",
            max_labels=max_labels,
            max_weights=max_weights,
            stall_timeout=stall_timeout,
            drift_threshold=drift_threshold or None,
            drift_delta=drift_delta,
        )
        config = ServeConfig(
            learner=LearnerSpec.from_options(algo, learner_options, learners),
            settings=settings,
            source=source,
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            group=group,
            consumer_options=tuple(consumer_option or ()),
            predictions_topic=predictions_topic,
            dead_letter_topic=dead_letter_topic,
            compression=compression,
            max_record_bytes=max_record_bytes,
            max_batch_bytes=max_batch_bytes,
            on_offset_reset=on_offset_reset,
            message_format=message_format,
            checkpoint_dir=checkpoint_dir,
            keep=keep,
            metrics_addr=metrics_addr,
            http_addr=None if http_addr == "off" else http_addr,
            http_learn=http_learn,
            http_max_body=http_max_body,
            http_nice=http_nice,
            hash_features=hash_features,
            max_features=max_features,
            one_vs_rest=one_vs_rest,
            tau_pos_kappa=tau_pos_kappa,
            per_label_metrics=per_label_metrics,
            sync_topic=sync_topic,
            sync=SyncPolicy(
                sync,
                every=sync_every,
                threshold=sync_threshold,
                max_interval=sync_max_interval,
                share=sync_share,
                idle_after=sync_idle_after,
            ),
            member_id=member_id,
            keyed=_keyed_settings(model_key, state_topic, max_models, max_model_bytes, key_ttl),
        )
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        logging.getLogger("kafka").setLevel(logging.WARNING)  # its connection chatter
        set_up_target_for_a_command()
        run_serve(config)  # it says itself when its warm-up compiles the kernels


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


def _seconds(text: str | float) -> float:
    """A duration option's seconds: ``30s``, ``5m``, ``1h``, ``7d`` or a number of seconds
    (a usage error otherwise).

    >>> _seconds("5m"), _seconds("2.5"), _seconds("7d")
    (300.0, 2.5, 604800.0)
    """
    if isinstance(text, int | float):
        return float(text)
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"not a duration: {text!r} (use 30s, 5m, 1h, 7d)") from None


def predict(
    *,
    learners: LearnerTable,
    inputs: Inputs = None,
    model: Annotated[
        str, _option("Model file written by learn.", "model", metavar="FILE")
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
        str, _option("Model file written by learn.", "model", metavar="FILE")
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
