"""The daemon's HTTP side: the operations address (:mod:`~streamlearn.http.ops`: /metrics,
health, checkpoint) and the API on the live model (:mod:`~streamlearn.http.api`:
/predict, /learn, /model), served by aiohttp from one thread
(:mod:`~streamlearn.http.server`); :mod:`~streamlearn.http.live` is what the daemon
shares with the API.

Nothing is imported here: the daemon (and with it ``streamlearn learn``) needs only
``live``, and aiohttp takes a tenth of a second to import.
"""
