from kueue_provreq.controllers.backoff import (
    NS,
    check_requeue_after_seconds,
    nominal_delay_seconds,
    wait_time_ns,
)


def test_defaults_60_120_240() -> None:
    assert [check_requeue_after_seconds(rc, 60, 1800, lambda: 0.999) for rc in (None, 1, 2)] == [60, 120, 240]


def test_cap_applies_from_the_second_step_only() -> None:
    assert nominal_delay_seconds(1, 100, 50) == 100
    assert nominal_delay_seconds(2, 100, 50) == 50
    assert nominal_delay_seconds(7, 60, 3600) == 3600
    assert nominal_delay_seconds(6, 60, 3600) == 1920


def test_jitter_is_below_one_ten_thousandth() -> None:
    assert wait_time_ns(60, 1800, 1, lambda: 0.5) == 60 * NS + int(0.5 * 1e-4 * 60 * NS)
    # below 10000 s the jitter never reaches a whole second
    assert check_requeue_after_seconds(3, 60, 0, lambda: 0.9999) == 480


def test_zero_base_and_uncapped() -> None:
    assert nominal_delay_seconds(3, 0, 1800) == 0
    assert nominal_delay_seconds(20, 1, 0) == 2**19
