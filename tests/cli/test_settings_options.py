"""``serve``'s options are made from the settings fields they set, so their defaults are
the fields' defaults: a run without options is configured as the dataclasses' defaults say.

Its options used to repeat twelve defaults that ``ServeConfig``, ``DaemonSettings`` and
``SyncPolicy`` declared too, each free to drift from the other.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from streamlearn.cli import app, serve_config
from streamlearn.config import LearnConfig, LearnerSpec
from streamlearn.daemon import DaemonSettings
from streamlearn.group.policy import SyncPolicy
from streamlearn.jobs.serve import ServeConfig
from streamlearn.keyed.settings import KeyedSettings
from streamlearn.options import declared
from streamlearn.replay import ReplaySchedule
from streamlearn.settings_options import settings_from

SERVE: Any = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
DECLARING = (ServeConfig, DaemonSettings, SyncPolicy)


def parsed(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The values ``serve`` is called with for ``argv`` (no STREAMLEARN_ variable set)."""
    for name in [n for n in os.environ if n.startswith("STREAMLEARN_")]:
        monkeypatch.delenv(name)
    with SERVE.make_context("serve", argv) as context:
        return dict(context.params)


def test_serve_without_options_is_configured_as_its_dataclasses_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    values = parsed([], monkeypatch)
    learner = LearnerSpec("pdm")
    made = serve_config(learner, values, replay=None, keyed=None)
    assert made == ServeConfig(learner=learner)
    assert made.settings == DaemonSettings() and made.sync == SyncPolicy()
    # the options serve reads beside the dataclasses' fields
    assert values["replay_every"] is None and DaemonSettings().replay is None
    assert values["replay_passes"] == ReplaySchedule().passes
    assert values["model_key"] is False and ServeConfig(learner=learner).keyed is None


def test_every_declared_field_has_its_option_with_the_declared_help(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """And each shows its field's default, as the command line writes it."""
    by_help = {param.help: param for param in SERVE.params}
    for declaring in DECLARING:
        for setting in dataclasses.fields(declaring):
            shown = declared(setting)
            if shown is None:
                continue
            param = by_help[shown.help]
            assert param.rich_help_panel == shown.panel
            assert param.metavar == shown.metavar
            assert bool(param.show_default) == shown.show_default
            if shown.name is not None:
                assert param.opts == [f"--{shown.name}"]
            else:
                assert param.opts[0].endswith(setting.name.replace("_", "-"))


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["--stall-timeout", "2m"], "stall_timeout", 120.0),
        (["--idle-replay", "off"], "idle_replay", False),
        (["--sync", "periodic"], "mode", "periodic"),
        (["--sync-max-interval", "5"], "max_interval", 5.0),
        (["--http-addr", "off"], "http_addr", None),
        (["--consumer-option", "check_crcs=false"], "consumer_options", ("check_crcs=false",)),
    ],
)
def test_an_option_sets_its_field(
    argv: list[str], field: str, value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if field == "consumer_options":  # a Kafka source's
        argv = [*argv, "--source", "kafka", "--bootstrap-servers", "b:9092", "--topic", "t"]
    made = serve_config(LearnerSpec("pdm"), parsed(argv, monkeypatch), replay=None, keyed=None)
    holders = (made, made.settings, made.sync)
    assert [getattr(h, field) for h in holders if hasattr(h, field)] == [value]


def test_the_keyed_options_help_states_the_keyed_settings_defaults() -> None:
    """``--max-models`` and ``--max-model-bytes`` default to None (given only with
    ``--model-key``); their help says the default that then applies."""
    helps = {param.name: param.help for param in SERVE.params}
    assert f"({KeyedSettings().max_models})" in helps["max_models"]
    assert KeyedSettings().max_model_bytes == 1 << 30 and "(1 GiB)" in helps["max_model_bytes"]


def test_a_config_file_sets_format_by_its_option_name(tmp_path: Path) -> None:
    """Each option's key in a --config file is its name; ``format`` (of ``--format``) was
    read as ``message_format`` and ``format`` ignored."""
    config = tmp_path / "serve.toml"
    config.write_text('[serve]\nformat = "json"\n')
    result = CliRunner().invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 1
    assert "--format json" in result.stderr and "svmlight lines" in result.stderr


def test_learn_without_options_is_configured_as_learn_configs_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``learn`` shares the mechanism: its options are LearnConfig's fields'."""
    command: Any = typer.main.get_command(app).commands["learn"]  # type: ignore[attr-defined]
    for name in [n for n in os.environ if n.startswith("STREAMLEARN_")]:
        monkeypatch.delenv(name)
    with command.make_context("learn", []) as context:
        values = dict(context.params)
    learner = LearnerSpec("pdm")
    assert settings_from(LearnConfig, values, learner=learner) == LearnConfig(learner=learner)
    assert (values["replay_every"], values["replay_passes"]) == (10_000, 1)
    assert ReplaySchedule(every=10_000, passes=1) == ReplaySchedule()
