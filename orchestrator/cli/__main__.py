"""`python -m orchestrator.cli`: the `etfarm` program."""

from orchestrator.cli import program

program()
