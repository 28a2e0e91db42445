"""The issue's own use: a river pipeline under progressive validation."""

from __future__ import annotations

from river import compose, datasets, evaluate, metrics, preprocessing

from streamlearn.river import PAUMClassifier, PDMClassifier


def test_progressive_validation_in_a_pipeline() -> None:
    model = compose.Pipeline(preprocessing.StandardScaler(), PDMClassifier(eps=0.05, delta=1.0))
    accuracy = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.Accuracy())
    # the same model by hand: predict each example, then learn it
    scaler, by_hand = preprocessing.StandardScaler(), PDMClassifier(eps=0.05, delta=1.0)
    correct = 0
    for x, y in datasets.Phishing():
        z = scaler.transform_one(x)
        correct += by_hand.predict_one(z) == y
        scaler.learn_one(x)
        by_hand.learn_one(scaler.transform_one(x), y)
    assert accuracy.get() == correct / 1250
    assert accuracy.get() > 0.8


def test_probability_metrics_in_a_pipeline() -> None:
    model = preprocessing.StandardScaler() | PAUMClassifier(delta=1.0)
    auc = evaluate.progressive_val_score(datasets.Phishing(), model, metrics.ROCAUC())
    assert auc.get() > 0.85


def test_defaults_learn_from_the_first_example() -> None:
    """delta='auto' by default: a provisional Delta from the first example, learned at
    once."""
    model = PDMClassifier()
    first_x, first_y = next(iter(datasets.Phishing()))
    model.learn_one(first_x, first_y)
    assert model.learner.delta_ is not None and model.learner.summary()["examples"] == 1
    accuracy = evaluate.progressive_val_score(
        datasets.Phishing(), PDMClassifier(), metrics.Accuracy()
    )
    assert accuracy.get() >= 0.85
