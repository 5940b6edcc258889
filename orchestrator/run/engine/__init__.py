"""The job engine: one job (job.py), its executor on this host (local_executor.py), each device's session in it
(session.py), the models a job runs (sweep.py, belonging.py) and its log (joblog.py)."""
