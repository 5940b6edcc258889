from orchestrator.cli import program

program()
