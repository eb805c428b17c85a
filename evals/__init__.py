"""Agent evaluation: benchmark tasks, evaluators and episode runners over the explorer's browser."""
