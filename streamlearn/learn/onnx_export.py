"""A model as an ONNX graph (``streamlearn export --format onnx``), for runtimes that
take ONNX (onnxruntime, and what serves it).

The graph takes ``X``, dense rows of ``n_features`` doubles (an example's feature ``j``
of the svmlight input ``j+1:v`` at column ``j``), and gives, as :func:`load_json` and the
HTTP API do:

- a binary model: ``score`` (the decision value), ``label`` (1 when it is positive, else
  -1) and ``probability`` (P(+1), the model's calibration);
- a one-vs-rest bank: ``scores`` (one column per label, in the order of ``labels`` in the
  graph's metadata), ``label`` (the label of the largest) and ``probabilities``.

Built from standard operators only (MatMul, Mul, Add, Greater, Where, Sigmoid, ArgMax,
Gather), opset 17; its decision values are the model's within rounding (a dense product
instead of the model's sparse one). Needs the ``onnx`` package: ``pip install
'streamlearn[onnx]'``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from streamlearn.errors import InvalidInputError
from streamlearn.learn.model import Model
from streamlearn.learn.params import plain_params
from streamlearn.learn.predictor import BankPredictor, BinaryPredictor

#: the opset the graph is written for
OPSET = 17


def export_onnx(model: Model) -> bytes:
    """The serialized ONNX model of ``model`` (see the module doc)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise InvalidInputError(
            "ONNX export needs the onnx package: pip install 'streamlearn[onnx]'"
        ) from exc
    predictor = model.predictor()
    nodes: list[Any] = []
    if isinstance(predictor, BinaryPredictor):
        weights = predictor.weights.reshape(-1, 1)
        scales = np.array([predictor.scale])
        intercepts = np.array([predictor.intercept])
        slopes = np.array([_slope(predictor.calibration.slope, predictor.margin_factor)])
        labels = None
    elif isinstance(predictor, BankPredictor):
        weights = predictor.weights.T
        scales, intercepts = predictor.scales, predictor.intercepts
        slopes = np.array([_slope(p.slope, f) for p, f in zip(predictor.calibrations,
                          predictor.margin_factors.tolist(), strict=True)])  # fmt: skip
        labels = list(predictor.labels)
    else:
        raise InvalidInputError(f"no ONNX export of a {type(predictor).__name__}")
    n_features = weights.shape[0]
    constants = {
        "weights": np.ascontiguousarray(weights, dtype=np.float64),
        "scales": np.asarray(scales, dtype=np.float64),
        "intercepts": np.asarray(intercepts, dtype=np.float64),
        "slopes": np.asarray(slopes, dtype=np.float64),
        "zero": np.array(0.0),
        "plus": np.array(1, dtype=np.int64),
        "minus": np.array(-1, dtype=np.int64),
    }
    nodes += [
        helper.make_node("MatMul", ["X", "weights"], ["dots"]),
        helper.make_node("Mul", ["dots", "scales"], ["scaled"]),
        helper.make_node("Add", ["scaled", "intercepts"], ["all_scores"]),
        helper.make_node("Mul", ["all_scores", "slopes"], ["margins"]),
        helper.make_node("Sigmoid", ["margins"], ["all_probabilities"]),
    ]
    rows = "N"
    if labels is None:
        constants["column"] = np.array([1], dtype=np.int64)
        nodes += [
            helper.make_node("Squeeze", ["all_scores", "column"], ["score"]),
            helper.make_node("Squeeze", ["all_probabilities", "column"], ["probability"]),
            helper.make_node("Greater", ["score", "zero"], ["positive"]),
            helper.make_node("Where", ["positive", "plus", "minus"], ["label"]),
        ]
        outputs = [
            helper.make_tensor_value_info("score", TensorProto.DOUBLE, [rows]),
            helper.make_tensor_value_info("label", TensorProto.INT64, [rows]),
            helper.make_tensor_value_info("probability", TensorProto.DOUBLE, [rows]),
        ]
    else:
        numeric = all(float(v).is_integer() for v in labels)
        constants["labels"] = np.array(labels, dtype=np.int64 if numeric else np.float64)
        nodes += [
            helper.make_node("Identity", ["all_scores"], ["scores"]),
            helper.make_node("Identity", ["all_probabilities"], ["probabilities"]),
            helper.make_node(
                "ArgMax", ["scores"], ["best"], axis=1, keepdims=0, select_last_index=0
            ),
            helper.make_node("Gather", ["labels", "best"], ["label"], axis=0),
        ]
        kind = TensorProto.INT64 if numeric else TensorProto.DOUBLE
        outputs = [
            helper.make_tensor_value_info("scores", TensorProto.DOUBLE, [rows, len(labels)]),
            helper.make_tensor_value_info("label", kind, [rows]),
            helper.make_tensor_value_info("probabilities", TensorProto.DOUBLE, [rows, len(labels)]),
        ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        f"streamlearn-{model.algorithm}",
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, [rows, n_features])],
        outputs,
        initializer=[numpy_helper.from_array(value, name) for name, value in constants.items()],
    )
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                             producer_name="streamlearn")  # fmt: skip
    made.ir_version = 8  # readable by onnxruntime releases of the last years
    params = json.dumps(plain_params(model.get_params()))
    metadata = {"algorithm": model.algorithm, "params": params, "kind": predictor.kind}
    if labels is not None:
        metadata["labels"] = json.dumps(labels)
    helper.set_model_props(made, metadata)
    onnx.checker.check_model(made)
    return bytes(made.SerializeToString())


def _slope(slope: float, margin_factor: float) -> float:
    """The factor the Platt sigmoid applies to a decision value."""
    return slope * margin_factor if math.isfinite(margin_factor) else slope


def dense(
    rows: tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float64]],
    n_features: int,
) -> npt.NDArray[np.float64]:
    """CSR ``rows`` as the dense ``X`` the graph takes (features past ``n_features``
    dropped: they weigh 0)."""
    indptr, indices, values = rows
    out = np.zeros((indptr.shape[0] - 1, n_features))
    for i in range(indptr.shape[0] - 1):
        lo, hi = int(indptr[i]), int(indptr[i + 1])
        keep = indices[lo:hi] < n_features
        out[i, indices[lo:hi][keep]] = values[lo:hi][keep]
    return out
