"""A secret from the environment: a variable that holds it, or one that names a file
whose first line holds it (so that it never shows in ``ps`` or a unit file).

>>> secret_from_variables({"T": " s3cret "}, "T", "T_FILE", what="the token")
's3cret'
>>> secret_from_variables({}, "T", "T_FILE", what="the token") is None
True
>>> secret_from_variables({"T": "  "}, "T", "T_FILE", what="the token")
Traceback (most recent call last):
...
streamlearn.errors.InvalidParameterError: the token (T) is empty
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from streamlearn.errors import InvalidParameterError


def secret_from_variables(
    environ: Mapping[str, str], variable: str, file_variable: str, *, what: str
) -> str | None:
    """The secret ``variable`` holds, or the first line of the file ``file_variable``
    names, stripped (None: neither is set). Refuses both at once, an empty secret and a
    file that cannot be read, naming ``what`` the secret is for."""
    text, path = environ.get(variable), environ.get(file_variable)
    if text is not None and path is not None:
        raise InvalidParameterError(f"set {variable} or {file_variable}, not both")
    source = variable
    if path is not None:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidParameterError(f"{file_variable}: cannot read {path}: {exc}") from exc
        text = lines[0] if lines else ""
        source = f"the first line of {path}"
    if text is None:
        return None
    secret = text.strip()
    if not secret:
        raise InvalidParameterError(f"{what} ({source}) is empty")
    return secret
