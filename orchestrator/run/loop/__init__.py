"""The process-run loop of a leased, staged device: the missing process runs (process_loop.py), each one run on
the device (process_run.py), started as settled once per session (launch.py)."""
