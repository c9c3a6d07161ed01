"""GreenDyGNN's control plane: the congestion estimator on synthetic RTT series, the state
vector, the action space and the controllers' rules."""

from __future__ import annotations

import numpy as np
import pytest

from commgnn.systems.greendygnn.controller import (
    WINDOWS,
    ControllerState,
    WindowDecision,
    actions,
    make_controller,
    pow2_floor,
)
from commgnn.systems.greendygnn.estimator import CongestionEstimator


def _state(delays_ms=(0, 0, 0, 0), previous=None, multipliers=None):
    return ControllerState(
        rank=0, multipliers=list(multipliers or [1.0] * 4),
        owner_hit_rates=[1.0, 0.5, 0.25, 0.0], global_hit_rate=0.4, stall_fraction=0.1,
        rebuild_fraction=0.2, miss_fraction=0.6, delay_s=max(delays_ms) / 1e3,
        remaining_fraction=0.5, previous=previous or WindowDecision(16),
        delays_s=[d / 1e3 for d in delays_ms])


def test_estimator_on_a_synthetic_rtt_series():
    est = CongestionEstimator([1, 2], warmup_epochs=2, recent=30)
    # warm-up: owner 1's RTTs 1..20 ms, owner 2's 2 ms flat (target seconds)
    for i in range(20):
        est.record(0 if i < 10 else 1, 1, (i + 1) / 1e3, 4000)
        est.record(0, 2, 2e-3, 4000)
    assert not est.warm
    assert est.estimate().multipliers == {1: 1.0, 2: 1.0}  # nothing before the baseline
    # congested epoch: owner 1's link gains 20 ms; a few outliers do not move the median
    series = [23.85e-3] * 27 + [500e-3] * 3
    for rtt in series:
        est.record(2, 1, rtt, 4000)
    est.record(2, 2, 2e-3, 4000)
    assert est.warm
    base = float(np.quantile(np.arange(1, 21) / 1e3, 0.15))  # 3.85 ms
    assert est.baseline_s == pytest.approx({1: base, 2: 2e-3})
    out = est.estimate()
    assert out.delays_s[1] == pytest.approx(23.85e-3 - base)  # = 20 ms
    assert out.delays_s[1] == pytest.approx(20e-3)
    assert out.multipliers[1] == pytest.approx(23.85 / 3.85)
    assert out.delays_s[2] == 0.0 and out.multipliers[2] == pytest.approx(1.0)
    assert out.most_congested == 1 and out.delay_s == pytest.approx(20e-3)
    # only the 30 most recent count: the link recovers
    for _ in range(30):
        est.record(3, 1, 3e-3, 4000)
    assert est.estimate().delays_s[1] == 0.0  # below the baseline: clamped to 0


def test_estimator_inverts_eq4_with_gamma_and_round_trips_its_state():
    gamma = 1e-9  # s per byte per ms
    est = CongestionEstimator([1], warmup_epochs=1, recent=5, gamma_s_per_byte_ms=gamma)
    for _ in range(10):
        est.record(0, 1, 1e-3, 10_000)
    delay = 8e-3  # T = T0 + δ + γ·b·δ_ms
    for _ in range(5):
        est.record(1, 1, 1e-3 + delay + gamma * 10_000 * delay * 1e3, 10_000)
    assert est.estimate().delays_s[1] == pytest.approx(delay)
    copy = CongestionEstimator([1], warmup_epochs=1, recent=5, gamma_s_per_byte_ms=gamma)
    copy.load_state_dict(est.state_dict())
    assert copy.estimate() == est.estimate()


def test_state_vector_has_the_papers_23_floats_for_four_workers():
    vec = _state(previous=WindowDecision(8, bias_owner=2)).vector()
    assert vec.shape == (23,) and vec.dtype == np.float32
    assert vec[:4].tolist() == [1.0] * 4  # multipliers
    assert vec[4:9].tolist() == pytest.approx([1.0, 0.5, 0.25, 0.0, 0.4])  # hit rates
    assert vec[9:14].tolist() == pytest.approx([0.1, 0.2, 0.6, 0.0, 0.5])  # load ratios
    assert vec[14:22].tolist() == [1.0 if w == 8 else 0.0 for w in WINDOWS]
    assert vec[22] == pytest.approx(2 / 3)  # owner 2 is the 2nd of the remote owners 1,2,3


def test_action_space_and_templates():
    assert len(actions([1, 2, 3])) == 32
    assert WindowDecision(4).reserved([1, 2, 3]) == {}
    assert WindowDecision(4, 3).reserved([1, 2, 3]) == {3: 0.6}
    with pytest.raises(ValueError, match="not a remote owner"):
        WindowDecision(4, 0).reserved([1, 2, 3])
    with pytest.raises(ValueError, match="not one of"):
        WindowDecision(3)
    d = WindowDecision(32, 1, ((1, 2.5), (2, 1.0)))
    assert WindowDecision.from_dict(d.to_dict()) == d


def test_static_and_heuristic_rules():
    static = make_controller("static", 16)
    assert static.decide(_state((0, 20, 0, 0))) == WindowDecision(16)
    heur = make_controller("heuristic", 16, {"cost_weights": True})
    assert heur.decide(_state()).window == 16  # clean: the nominal window
    assert heur.decide(_state((0, 3.9, 0, 0))).window == 16
    single = heur.decide(_state((0, 4, 0, 0), multipliers=[1, 1, 2.0, 1]))
    assert single.window == 8 and single.bias_owner == 1  # §IV-A: 16 → about 8 at 4 ms
    assert single.weights == ((1, 1.0), (2, 2.0), (3, 1.0))
    assert heur.decide(_state((0, 8, 0, 0))).window == 4
    assert heur.decide(_state((0, 20, 0, 0))).window == 2
    two = heur.decide(_state((0, 20, 15, 0)))
    assert two.window == 2 and two.bias_owner is None  # two links: uniform
    plain = make_controller("heuristic", 16, {"cost_weights": False})
    flat = plain.decide(_state((0, 4, 0, 0)))
    assert flat.bias_owner is None and flat.weights == ()
    assert [pow2_floor(v) for v in (0.5, 1, 3, 8, 9.9, 500)] == [1, 1, 2, 8, 8, 128]
    with pytest.raises(ValueError, match="unknown controller"):
        make_controller("oracle", 16)
