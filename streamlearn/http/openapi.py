"""The OpenAPI 3.1 description of the HTTP API (served at GET /openapi.json).

>>> document = openapi_document(4 << 20)
>>> document["openapi"], sorted(document["paths"])
('3.1.0', ['/learn', '/model', '/model/weights', '/openapi.json', '/predict'])
"""

from __future__ import annotations

from typing import Any

from streamlearn import __version__

_NUMBER = {"type": "number"}
_EXAMPLE = {
    "type": "object",
    "description": (
        "One example: 0-based feature indices (strictly increasing) with their values, "
        "or feature values by name (hashed as the river adapters hash them: "
        "crc32(name) % --hash-features). `label` (+1/-1, or a class) or `labels` (a "
        "label set) are read by /learn and ignored by /predict. With --http-learn, an "
        "`id` on /predict keeps the example until /learn gives its label by id alone: "
        '{"id": ..., "label": ...} with no features (a second label for an id, an '
        "unknown, expired or evicted id: listed in the 422 answer)."
    ),
    "properties": {
        "id": {"type": ["string", "integer"], "minLength": 1, "maxLength": 256},
        "indices": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "values": {"type": "array", "items": _NUMBER},
        "features": {"type": "object", "additionalProperties": _NUMBER},
        "label": _NUMBER,
        "labels": {"type": "array", "items": _NUMBER, "minItems": 1},
    },
}
_EXAMPLES = {
    "oneOf": [
        {"$ref": "#/components/schemas/Example"},
        {"type": "array", "items": {"$ref": "#/components/schemas/Example"}},
        {
            "type": "object",
            "required": ["examples"],
            "properties": {
                "examples": {"type": "array", "items": {"$ref": "#/components/schemas/Example"}}
            },
        },
    ]
}
_BODY = {
    "required": True,
    "content": {
        "text/plain": {
            "schema": {"type": "string"},
            "example": "1:0.5 7:1 42:0.25\n3:1\n",
        },
        "text/svmlight": {"schema": {"type": "string"}},
        "application/json": {"schema": _EXAMPLES},
        "application/msgpack": {"schema": _EXAMPLES},
    },
}
_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {"type": "string"},
        "rejected": {
            "type": "array",
            "description": "the examples that could not be read or learned (20 at most)",
            "items": {
                "type": "object",
                "properties": {
                    "line": {"type": "integer", "description": "line or example, from 1"},
                    "reason": {"type": "string"},
                    "text": {"type": "string"},
                },
            },
        },
    },
}
_RANKED = {
    "type": "object",
    "properties": {"label": _NUMBER, "score": _NUMBER, "probability": _NUMBER},
}
_PREDICTION = {
    "type": "object",
    "description": (
        "Binary model: the decision value, the label (+1 where it is positive) and the "
        "calibrated probability that the label is +1. One-vs-rest model: the label of the "
        "largest decision value with its score and probability, the labels with a "
        "positive decision value, and every label ranked."
    ),
    "required": ["score", "label", "probability"],
    "properties": {
        "score": {"type": ["number", "null"]},
        "label": {"type": ["number", "null"]},
        "probability": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "labels": {"type": "array", "items": _NUMBER},
        "ranking": {"type": "array", "items": _RANKED},
    },
}


#: the model key of a daemon that learns one model per message key (serve --model-key)
_KEY = {
    "name": "key",
    "in": "query",
    "required": False,
    "description": (
        "serve --model-key: the message key whose model answers or learns (its UTF-8 "
        "bytes); required there, refused by a daemon of one model"
    ),
    "schema": {"type": "string"},
}


def _errors(*codes: int) -> dict[str, Any]:
    reasons = {
        400: (
            "a body that cannot be read (its rejected examples listed), no example, or "
            "a key missing or not expected"
        ),
        401: "no or a wrong bearer token",
        403: "learning over HTTP is off (serve --http-learn)",
        404: "serve --model-key: this daemon has no model of the key",
        408: "the body did not arrive in time",
        409: "an id that waits for its label or was labelled (its rows listed; none kept)",
        413: "the body is larger than --http-max-body",
        415: "a content type other than text/plain, application/json, application/msgpack",
        503: "the model is not loaded yet, the daemon is stopping, or too much waits to be learned",
        504: "the daemon did not learn the examples in time (they stay queued)",
    }
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    return {str(code): {"description": reasons[code], "content": error} for code in codes}


def openapi_document(max_body: int) -> dict[str, Any]:
    """The API's description, with this server's body limit."""
    body = {**_BODY, "description": f"one or many examples, at most {max_body} bytes"}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "streamlearn",
            "version": __version__,
            "description": "Predictions from, and learning by, a live streamlearn model.",
        },
        "components": {
            "schemas": {"Example": _EXAMPLE, "Error": _ERROR, "Prediction": _PREDICTION},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/predict": {
                "post": {
                    "summary": "Answer examples with the model's latest published copy",
                    "parameters": [_KEY],
                    "requestBody": body,
                    "responses": {
                        "200": {
                            "description": "one prediction per example, in order",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "version": {"type": "integer"},
                                            "predictions": {
                                                "type": "array",
                                                "items": _ref("Prediction"),
                                            },
                                        },
                                    }
                                }
                            },
                        },
                        **_errors(400, 401, 404, 408, 409, 413, 415, 503),
                    },
                }
            },
            "/learn": {
                "post": {
                    "summary": "Learn labelled examples, in order with the stream",
                    "parameters": [_KEY],
                    "requestBody": body,
                    "responses": {
                        "200": _learned("every example learned"),
                        "422": _learned("the model refused some examples (listed)"),
                        **_errors(400, 401, 403, 404, 408, 413, 415, 503, 504),
                    },
                }
            },
            "/model": {
                "get": {
                    "summary": "The model: algorithm, parameters, examples, certificate",
                    "parameters": [_KEY],
                    "responses": {
                        "200": {
                            "description": "the model's description",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **_errors(400, 401, 404, 503),
                    },
                }
            },
            "/model/weights": {
                "get": {
                    "summary": "The model's weights, intercept, calibration and certificate, "
                    "as `streamlearn export` writes them (docs/export.md)",
                    "parameters": [_KEY],
                    "responses": {
                        "200": {
                            "description": "the streamlearn-linear document",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **_errors(400, 401, 404, 503),
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This description",
                    "security": [],
                    "responses": {"200": {"description": "OpenAPI 3.1"}},
                }
            },
        },
    }


def _learned(description: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "learned": {"type": "integer"},
            "held_examples": {
                "type": "integer",
                "description": "examples the model still holds back (delta auto)",
            },
            "version": {"type": "integer", "description": "a version whose copy holds them"},
            "rejected": {"$ref": "#/components/schemas/Error/properties/rejected"},
        },
    }
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}
