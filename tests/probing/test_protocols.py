"""The shipped fine-tuning and from-scratch curves load and match their logs."""

from __future__ import annotations

import json

import pytest

from vitviz.probing.protocols import RUN_NAMES, read_logs, schedules, shipped_summary, summarise

SCHEDULES = schedules()


def test_some_schedule_is_shipped():
    assert "e10" in SCHEDULES


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_shipped_summary_matches_its_logs(schedule):
    logs = read_logs(schedule)
    assert shipped_summary(schedule) == json.loads(json.dumps(summarise(logs)))
    for log in logs:
        assert log.run in RUN_NAMES
        assert [e["epoch"] for e in log.epochs] == list(range(1, log.recipe["epochs"] + 1))
        assert 0.0 <= log.final["test_acc"] <= 1.0 and log.final["n_test"] == 64
        assert log.final["seed"] == log.seed and log.final["run"] == log.run
