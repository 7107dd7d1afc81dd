"""The rolling-bounce benchmark's restart targets of issue 26: a static restart no slower than confluent
AIOConsumer's on either protocol, and at most 1.15x aiokafka static's; judged on medians, only for the
modes that ran."""

from __future__ import annotations

from benchmarks.rolling_bounce import Repeat, RestartFigures, summarise, targets


def _mode(name: str, *seconds: float) -> tuple[str, object]:
    restarts = [RestartFigures(i, s, s / 2, s / 2, s / 2, 0) for i, s in enumerate(seconds)]
    return name, summarise(name, [Repeat(0, None, restarts=restarts)])


def _verdicts(*modes: tuple[str, object]) -> dict[str, tuple[bool, str]]:
    return {
        t.target: (t.met, t.detail)
        for t in targets(3, dict(modes))  # type: ignore[arg-type]
        if "confluent" in t.target or "1.15x" in t.target
    }


def test_against_confluent_on_each_protocol_by_the_median() -> None:
    verdicts = _verdicts(
        _mode("staticconsumer-static", 0.30, 0.31, 0.90),
        _mode("confluent-static", 0.29, 0.32, 0.33),
        _mode("staticconsumer-consumer", 0.40, 0.41, 0.42),
        _mode("confluent-consumer", 0.30, 0.30, 0.31),
    )
    classic = next(v for k, v in verdicts.items() if "classic protocol" in k)
    consumer = next(v for k, v in verdicts.items() if "consumer protocol" in k)
    assert classic == (True, "0.31s against confluent 0.32s (0.97x)")
    assert consumer[0] is False
    assert "1.37x" in consumer[1]


def test_against_aiokafka_static_up_to_one_point_one_five() -> None:
    met = _verdicts(_mode("staticconsumer-static", 0.345), _mode("aiokafka-static", 0.30))
    assert [v[0] for v in met.values()] == [True]
    missed = _verdicts(_mode("staticconsumer-static", 0.35), _mode("aiokafka-static", 0.30))
    assert [v for v in missed.values()] == [(False, "1.17x (0.35s against aiokafka 0.30s)")]


def test_absent_when_a_side_did_not_run() -> None:
    assert _verdicts(_mode("staticconsumer-static", 0.3)) == {}
    assert _verdicts(_mode("confluent-consumer", 0.3), _mode("aiokafka-static", 0.3)) == {}
