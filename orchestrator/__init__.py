"""etfarm host orchestrator: export, build, stage, run, analyze ExecuTorch profiles."""

__version__ = "0.1.0"
