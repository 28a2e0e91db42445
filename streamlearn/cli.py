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
            "--config", envvar=_env("config"), help="TOML file of option values.", exists=True
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


Inputs = Annotated[
    list[Path] | None,
    typer.Argument(help="svmlight/libsvm files, read in order; none or '-' reads standard input."),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", envvar=_env("quiet"), help="No progress bar.")
]
AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def _option(help_text: str, name: str, *flags: str, **kwargs: Any) -> Any:
    return typer.Option(*flags, help=help_text, envvar=_env(name), **kwargs)


# the learner's own options (``--eps``, ``--tau-pos``, ...) come from the table of
# learners (:func:`learner_options`); these are the job's
Algo = Annotated[str, _option("Algorithm (see --help for the list).", "algo", metavar="NAME")]
Shrink = Annotated[
    bool | None, _option("Level 3 of the active sets keeps only updated examples.", "shrink")
]
ReplayEvery = Annotated[
    int, _option("Replay after every K new examples (0: never).", "replay_every")
]
ReplayPasses = Annotated[int, _option("Replay passes each time (R).", "replay_passes")]
MaxFeatures = Annotated[
    int,
    _option(
        "Reject lines with larger indices (weights: 8 bytes a feature); never below a "
        "resumed model's size.",
        "max_features",
    ),
]
MaxLabels = Annotated[
    int, _option("One-vs-rest: reject lines that would bring more labels.", "max_labels")
]
MaxWeights = Annotated[
    int,
    _option(
        "One-vs-rest: reject lines that would make labels x features larger (8 bytes a "
        "weight); never below a resumed bank's size.",
        "max_weights",
    ),
]
OneVsRest = Annotated[
    bool,
    _option(
        "One binary learner per label (lines carry label sets like 1,3,7 or one class).",
        "one_vs_rest",
    ),
]
TauPosKappa = Annotated[
    float | None,
    _option(
        "PAUM banks: per-label tau_pos * 2 / (1 + exp(-kappa c)), c the label's "
        "fraction of positives.",
        "tau_pos_kappa",
    ),
]


def learner_options(learners: LearnerTable) -> list[introspect.Parameter]:
    """One command-line option per parameter of the learners in ``learners`` (each name
    once, in the table's order, then the parameters every learner takes), all None
    unless given. A name several learners take says what it means for each."""
    meanings: dict[str, dict[str, list[str]]] = {}
    kinds: dict[str, type] = {}
    common = {param.name for param in COMMON_PARAMS}
    rule_params = [(entry.name, param) for entry in learners.entries() for param in entry.params]
    for algorithm, param in [*rule_params, *(("", param) for param in COMMON_PARAMS)]:
        if not param.cli:
            continue
        kinds[param.name] = param.kind
        meanings.setdefault(param.name, {}).setdefault(param.doc, []).append(algorithm)
    options = []
    for name, docs in meanings.items():
        if name in common:
            help_text = next(iter(docs))
        else:
            help_text = " ".join(f"{', '.join(algos)}: {doc}" for doc, algos in docs.items())
        help_text = help_text.replace("[", "\\[")  # rich would read [x, rho] as markup
        kind = kinds[name]
        flags = [f"--{name.replace('_', '-')}"]
        if kind is bool:
            flags = [f"{flags[0]}/--no-{name.replace('_', '-')}"]
        annotation = Annotated[kind | None, _option(help_text, name, *flags)]  # type: ignore[valid-type]
        keyword = introspect.Parameter.KEYWORD_ONLY
        options.append(introspect.Parameter(name, keyword, default=None, annotation=annotation))
    shrink = introspect.Parameter("shrink", introspect.Parameter.KEYWORD_ONLY, default=None)
    return [*options, shrink.replace(annotation=Shrink)]


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
            algo = Annotated[names, _option("Algorithm.", "algo")]
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
            "--config", help="TOML file of option values (as before the command).",
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
    """Compile every kernel into numba's cache (make install runs it; pip users once)."""
    with _errors_to_exit_codes():
        from streamlearn.jobs.warmup import run_warmup

        compiled = run_warmup(_say, learners)
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
    made.command(name="learn")(_command(learn, learners, with_options=True))
    made.command(name="serve")(_command(serve, learners, with_options=True))
    made.command(name="predict")(_command(predict, learners))
    made.command(name="eval")(_command(evaluate_command, learners))
    made.command(name="inspect")(_command(inspect, learners))
    made.command(name="warmup")(_command(warmup, learners))
    return made


def learn(
    *,
    learners: LearnerTable,
    learner_options: dict[str, Any],
    inputs: Inputs = None,
    algo: Algo = "pdm",
    model: Annotated[str | None, _option("Write the model (checkpoint) here.", "model")] = None,
    resume: Annotated[str | None, _option("Continue from this model file.", "resume")] = None,
    replay_every: ReplayEvery = 10_000,
    replay_passes: ReplayPasses = 1,
    converge: Annotated[
        bool, _option("Replay to convergence at the end.", "converge", show_default=True)
    ] = True,
    epochs: Annotated[
        int | None, _option("N plain passes in input order instead of replay.", "epochs")
    ] = None,
    max_features: MaxFeatures = DEFAULT_MAX_FEATURES,
    strict: Annotated[bool, _option("Stop at the first bad line (exit code 2).", "strict")] = False,
    keep: Annotated[
        int,
        _option(
            "Model files to keep, the new one included: K - 1 previous ones as m.ckpt.1, ...",
            "keep",
        ),
    ] = 1,
    one_vs_rest: OneVsRest = False,
    max_labels: MaxLabels = DEFAULT_MAX_LABELS,
    max_weights: MaxWeights = DEFAULT_MAX_WEIGHTS,
    tau_pos_kappa: TauPosKappa = None,
    as_json: AsJson = False,
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
        Literal["stdin", "kafka"], _option("Where examples come from.", "source")
    ] = "stdin",
    bootstrap_servers: Annotated[
        str | None, _option("Kafka brokers, host:port[,host:port].", "bootstrap_servers")
    ] = None,
    topic: Annotated[
        str | None, _option("Topic of labelled and unlabelled examples.", "topic")
    ] = None,
    group: Annotated[str, _option("Kafka consumer group.", "group")] = "streamlearn",
    consumer_option: Annotated[
        list[str] | None,
        _option(
            "Kafka consumer option NAME=VALUE, repeatable (session.timeout.ms=6000); "
            "security options come from the environment.",
            "consumer_option",
            "--consumer-option",
        ),
    ] = None,
    predictions_topic: Annotated[
        str | None,
        _option("Topic for predictions (default with stdin: stdout).", "predictions_topic"),
    ] = None,
    dead_letter_topic: Annotated[
        str | None,
        _option(
            "Topic that receives messages with rejected lines, and what cannot be read.",
            "dead_letter_topic",
        ),
    ] = None,
    compression: Annotated[
        Literal["none", "gzip", "snappy", "lz4", "zstd"],
        _option(
            "Codec of what serve writes to Kafka (predictions, dead letters, sync and "
            "state records).",
            "compression",
        ),
    ] = "none",
    max_record_bytes: Annotated[
        int,
        _option(
            "A Kafka message larger than this is skipped as unreadable (16 MiB).",
            "max_record_bytes",
        ),
    ] = DEFAULT_MAX_RECORD_BYTES,
    max_batch_bytes: Annotated[
        int,
        _option(
            "A Kafka record batch that decompresses to more is skipped as unreadable (64 MiB).",
            "max_batch_bytes",
        ),
    ] = DEFAULT_MAX_BATCH_BYTES,
    on_offset_reset: Annotated[
        Literal["wait", "earliest"],
        _option(
            "A partition whose log went back behind what was learned: hold it, or learn "
            "it again from its start.",
            "on_offset_reset",
        ),
    ] = "wait",
    stall_timeout: Annotated[
        float,
        _option(
            "A partition whose messages wait this long without progress turns /readyz false.",
            "stall_timeout",
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "60s",  # type: ignore[assignment]  # the parser makes it seconds
    message_format: Annotated[
        Literal["svmlight", "msgpack", "json"],
        _option(
            "Kafka message format when no content-type header says (standard input is svmlight).",
            "format",
            "--format",
        ),
    ] = "svmlight",
    checkpoint_dir: Annotated[
        str | None, _option("Directory of checkpoints (none: no checkpoints).", "checkpoint_dir")
    ] = None,
    checkpoint_every: Annotated[
        int | None,
        _option(
            "Checkpoint after this many new examples too (by default time alone decides).",
            "checkpoint_every",
        ),
    ] = None,
    checkpoint_min_interval: Annotated[
        float,
        _option(
            "The least time between two checkpoints --checkpoint-every asks for.",
            "checkpoint_min_interval",
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "5s",  # type: ignore[assignment]  # the parser makes it seconds
    checkpoint_interval: Annotated[
        float,
        _option(
            "Checkpoint after this long (30s, 5m, 1h or seconds).",
            "checkpoint_interval",
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "30s",  # type: ignore[assignment]  # the parser makes it seconds
    keep: Annotated[int, _option("Checkpoints to keep.", "keep")] = 3,
    metrics_addr: Annotated[
        str, _option("HOST:PORT of /metrics, /healthz, /readyz.", "metrics_addr")
    ] = "127.0.0.1:9108",
    http_addr: Annotated[
        str,
        _option(
            "HOST:PORT of the HTTP API (/predict, /learn, /model), or off. Off loopback "
            "it needs a token (STREAMLEARN_HTTP_TOKEN or STREAMLEARN_HTTP_TOKEN_FILE).",
            "http_addr",
        ),
    ] = DEFAULT_HTTP_ADDR,
    http_learn: Annotated[
        bool, _option("Learn the examples POSTed to /learn (off: it answers 403).", "http_learn")
    ] = False,
    http_max_body: Annotated[
        int, _option("Bytes of the largest request body the HTTP API reads.", "http_max_body")
    ] = DEFAULT_HTTP_MAX_BODY,
    http_nice: Annotated[
        int,
        _option(
            "How far below learning the HTTP thread's scheduling priority is (Linux nice "
            "steps; 0: equal): under a flood of requests, answers slow before learning does.",
            "http_nice",
        ),
    ] = DEFAULT_HTTP_NICE,
    hash_features: Annotated[
        int | None,
        _option(
            "Examples given by feature name (JSON) put name at crc32(name) % N, as the river "
            "adapters do (default 2^20, or --max-features if smaller).",
            "hash_features",
        ),
    ] = None,
    idle_replay: Annotated[
        Literal["on", "off"],
        _option("Replay while the source is idle (off for reproducible runs).", "idle_replay"),
    ] = "on",
    replay_every: Annotated[
        int | None,
        _option(
            "Replay after every K new examples, a schedule of counts (0: never); by "
            "default the daemon replays in the time ingestion leaves (--replay-share).",
            "replay_every",
        ),
    ] = None,
    replay_passes: ReplayPasses = 1,
    replay_share: Annotated[
        float,
        _option(
            "Share of the time spent replaying while behind the stream (none while the "
            "lag grows); all idle time once caught up.",
            "replay_share",
        ),
    ] = 0.2,
    max_features: MaxFeatures = DEFAULT_MAX_FEATURES,
    one_vs_rest: OneVsRest = False,
    max_labels: MaxLabels = DEFAULT_MAX_LABELS,
    max_weights: MaxWeights = DEFAULT_MAX_WEIGHTS,
    tau_pos_kappa: TauPosKappa = None,
    per_label_metrics: Annotated[
        bool,
        _option(
            "One-vs-rest: also export per-label series (streamlearn_label_*).",
            "per_label_metrics",
        ),
    ] = False,
    sync_topic: Annotated[
        str | None,
        _option(
            "Join a learning group: the daemons of one --group that name the same compacted "
            "sync topic learn one model (created when missing; needs a numeric --delta).",
            "sync_topic",
        ),
    ] = None,
    sync: Annotated[
        Literal["dynamic", "periodic"],
        _option(
            "When a group member publishes its share: when its model has drifted "
            "(dynamic averaging), or after every --sync-every examples (periodic).",
            "sync",
        ),
    ] = "dynamic",
    sync_every: Annotated[
        int,
        _option(
            "Examples between two checks of the drift (dynamic) or two publications (periodic).",
            "sync_every",
        ),
    ] = 1000,
    sync_threshold: Annotated[
        float,
        _option(
            "Dynamic: publish once ||share - published share|| exceeds this fraction of ||model||.",
            "sync_threshold",
        ),
    ] = 0.6,
    sync_max_interval: Annotated[
        float,
        _option(
            "Publish at least this often while the share changes (what a member that "
            "dies loses at most).",
            "sync_max_interval",
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "60s",  # type: ignore[assignment]  # the parser makes it seconds
    sync_idle_after: Annotated[
        float,
        _option(
            "A group member counts the stream idle (and publishes what it learned, "
            "whatever the protocol says) once it has brought nothing for this long.",
            "sync_idle_after",
            parser=_seconds,
            metavar="DURATION",
        ),
    ] = "1s",  # type: ignore[assignment]  # the parser makes it seconds
    sync_share: Annotated[
        float,
        _option(
            "The most of its time a group member spends publishing (its window's "
            "certificate and a broker round trip a record): checks due sooner wait.",
            "sync_share",
        ),
    ] = 0.1,
    member_id: Annotated[
        str | None,
        _option("This member's id in its learning group (default: host-pid-random).", "member_id"),
    ] = None,
    model_key: Annotated[
        bool,
        _option(
            "Learn one model per Kafka message key (per tenant, per product): each key's "
            "messages are learned and answered by its own model (needs --delta).",
            "model_key",
        ),
    ] = False,
    state_topic: Annotated[
        str | None,
        _option(
            "--model-key: the compacted topic the models that leave memory go to "
            "(default GROUP-TOPIC-models; created when missing, partitioned like --topic).",
            "state_topic",
        ),
    ] = None,
    max_models: Annotated[
        int | None,
        _option(
            "--model-key: models held in memory at most (1000); the least recently used "
            "leave for the state topic.",
            "max_models",
        ),
    ] = None,
    max_model_bytes: Annotated[
        int | None,
        _option(
            "--model-key: bytes of the models held in memory at most (weights and replay "
            "buffers; 1 GiB).",
            "max_model_bytes",
        ),
    ] = None,
) -> None:
    """Learn continuously from standard input or a Kafka topic, with metrics and checkpoints.

    With --one-vs-rest, unlabelled examples are answered with a JSON object: the argmax
    label and its score, the labels with a positive score, and every label ranked."""
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
            keyed=_keyed_settings(model_key, state_topic, max_models, max_model_bytes),
        )
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        logging.getLogger("kafka").setLevel(logging.WARNING)  # its connection chatter
        set_up_target_for_a_command()
        run_serve(config)  # it says itself when its warm-up compiles the kernels


def _keyed_settings(
    model_key: bool, state_topic: str | None, max_models: int | None, max_bytes: int | None
) -> KeyedSettings | None:
    """``--model-key``'s settings (None without it; its options alone are refused)."""
    from streamlearn.keyed.settings import KeyedSettings

    if not model_key:
        given = {"--state-topic": state_topic, "--max-models": max_models,
                 "--max-model-bytes": max_bytes}  # fmt: skip
        named = [option for option, value in given.items() if value is not None]
        if named:
            raise InvalidParameterError(f"{', '.join(named)} needs --model-key")
        return None
    defaults = KeyedSettings()
    return KeyedSettings(
        state_topic=state_topic,
        max_models=defaults.max_models if max_models is None else max_models,
        max_model_bytes=defaults.max_model_bytes if max_bytes is None else max_bytes,
    )


def _seconds(text: str | float) -> float:
    """A duration option's seconds: ``30s``, ``5m``, ``1h`` or a number of seconds (a
    usage error otherwise).

    >>> _seconds("5m"), _seconds("2.5")
    (300.0, 2.5)
    """
    if isinstance(text, int | float):
        return float(text)
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"not a duration: {text!r} (use 30s, 5m, 1h)") from None


def predict(
    *,
    learners: LearnerTable,
    inputs: Inputs = None,
    model: Annotated[str, _option("Model file written by learn.", "model")] = "model.ckpt",
    labels: Annotated[
        bool,
        typer.Option("--labels", help="Print +1/-1 instead of scores (banks: the class)."),
    ] = False,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            help="One-vs-rest models: sets (labels with a positive score, 3,7), class "
            "(the argmax), ranking (label:score, best first) or scores (label:score).",
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
    model: Annotated[str, _option("Model file written by learn.", "model")] = "model.ckpt",
    as_json: AsJson = False,
) -> None:
    """Accuracy, precision, recall, F1, average precision and AUC on labelled lines; for
    one-vs-rest models per label and macro/micro averages (and multi-class accuracy)."""
    with _errors_to_exit_codes():
        with _compile_notice():
            learner, _ = load_model(model, learners)
            stream = InputStream([str(p) for p in inputs or ()])
            scores = evaluate(learner, stream, rejects=_quiet_log())
        _print_report(scores, as_json)


def inspect(
    *,
    learners: LearnerTable,
    model: Annotated[Path, typer.Argument(help="Model file written by learn.")],
    as_json: AsJson = False,
    export_weights_to: Annotated[
        Path | None, typer.Option("--export-weights", help="Save coef_ as a .npy file.")
    ] = None,
    export_buffer_to: Annotated[
        Path | None,
        typer.Option(
            "--export-buffer",
            help="Write the replay buffer (the examples the certificate is about) as "
            "svmlight, oldest first.",
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
