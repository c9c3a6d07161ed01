"""Model selection by validation accuracy (``train.summary.selection``) on hand-made rows."""

import math

from commgnn.train.summary import SELECTION_KEYS, selection


def _row(epoch: int, val: float, test: float) -> dict:
    return {"epoch": epoch, "val_acc": val, "test_acc": test}


def test_the_first_best_validation_epoch_gives_the_test_accuracy() -> None:
    rows = [_row(0, 0.50, 0.40), _row(1, 0.70, 0.61), _row(2, 0.70, 0.69),
            _row(3, 0.65, 0.66), _row(4, 0.68, 0.67)]
    result = selection(rows)
    assert result["best_val_acc"] == 0.70
    assert result["best_val_epoch"] == 1  # the first of the tied epochs
    assert result["test_acc_at_best_val"] == 0.61
    # the last three (0.70, 0.65, 0.68) raised the best before them (0.70) by 0
    assert result["val_gain_last3"] == 0.0


def test_the_gain_of_the_last_three_evaluations() -> None:
    rows = [_row(e, v, 0.0) for e, v in enumerate([0.2, 0.3, 0.5, 0.55, 0.58, 0.60])]
    assert math.isclose(selection(rows)["val_gain_last3"], 0.60 - 0.5)
    assert math.isnan(selection(rows[:3])["val_gain_last3"])  # nothing before the window


def test_without_evaluations_everything_is_unknown() -> None:
    assert set(selection([])) == set(SELECTION_KEYS)
    assert all(math.isnan(v) for v in selection([]).values())
