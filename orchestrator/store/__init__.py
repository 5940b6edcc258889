"""The results store (SQLite): every run's results model, raw samples and statistics, kept for history."""

from orchestrator.store.history import HistoryPoint

__all__ = ["HistoryPoint"]
