"""Where the API's token comes from, and when one is required."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlearn.errors import InvalidParameterError
from streamlearn.http.auth import check_exposure, token_from_env


def test_the_token_comes_from_the_variable_or_the_first_line_of_a_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("from-file\nsecond line\n")
    assert token_from_env({"STREAMLEARN_HTTP_TOKEN_FILE": str(path)}) == "from-file"
    assert token_from_env({"STREAMLEARN_HTTP_TOKEN": "abc"}) == "abc"
    assert token_from_env({}) is None


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"STREAMLEARN_HTTP_TOKEN": "a", "STREAMLEARN_HTTP_TOKEN_FILE": "f"}, "not both"),
        ({"STREAMLEARN_HTTP_TOKEN": "  "}, "is empty"),
        ({"STREAMLEARN_HTTP_TOKEN_FILE": "/no/such/file"}, "cannot read"),
    ],
)
def test_bad_tokens_are_refused(environ: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        token_from_env(environ)


def test_a_token_is_required_off_loopback() -> None:
    check_exposure("127.0.0.1", None, "--http-addr")
    check_exposure("0.0.0.0", "secret", "--http-addr")
    for host in ("0.0.0.0", "192.168.1.4", "example.org"):
        with pytest.raises(InvalidParameterError, match="STREAMLEARN_HTTP_TOKEN"):
            check_exposure(host, None, "--http-addr")
