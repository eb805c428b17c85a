"""`beside`: the Predictor's model call runs while the browser acts, and neither is left running when the other
fails."""

from __future__ import annotations

import asyncio

import pytest

from explorer.loop import beside


def test_both_run_at_once_and_both_results_come_back():
    order: list[str] = []

    async def predicting():
        order.append("predict starts")
        await asyncio.sleep(0.01)
        order.append("predict ends")
        return "prediction"

    async def acting():
        order.append("act starts")
        await asyncio.sleep(0.02)
        order.append("act ends")
        return "step"

    assert asyncio.run(beside(predicting(), acting())) == ("prediction", "step")
    assert order == ["predict starts", "act starts", "predict ends", "act ends"]


@pytest.mark.parametrize("failing", ["predicting", "acting"])
def test_a_failure_is_raised_after_the_other_finished(failing):
    finished: list[str] = []

    async def work(name: str, delay: float):
        await asyncio.sleep(delay)
        if name == failing:
            raise RuntimeError(f"{name} failed")
        finished.append(name)
        return name

    with pytest.raises(RuntimeError, match=f"{failing} failed"):
        asyncio.run(beside(work("predicting", 0.0), work("acting", 0.02)))
    assert finished == [n for n in ("predicting", "acting") if n != failing]
