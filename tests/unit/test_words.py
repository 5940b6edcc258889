from orchestrator.base.words import counted


def test_counts_are_written_in_their_number() -> None:
    assert counted(1, "job") == "1 job" and counted(0, "job") == "0 jobs" and counted(2, "device") == "2 devices"
    assert counted(3, "process run") == "3 process runs" and counted(2, "child", "children") == "2 children"
