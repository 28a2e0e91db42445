"""The daemon's HTTP side: the operations address (/metrics, health, checkpoint) and the
API on the live model (/predict, /learn, /model), served by aiohttp from one thread."""

from __future__ import annotations

from streamlearn.http.api import api_handler
from streamlearn.http.auth import check_exposure, token_from_env
from streamlearn.http.live import Learned, LiveModel, Published
from streamlearn.http.ops import ops_app
from streamlearn.http.server import HttpServer

__all__ = [
    "HttpServer",
    "Learned",
    "LiveModel",
    "Published",
    "api_handler",
    "check_exposure",
    "ops_app",
    "token_from_env",
]
