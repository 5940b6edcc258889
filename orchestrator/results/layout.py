"""The names of the files a finished run's directory holds at its top (run/rundir.py lays the directory out with
them, results/record.py reads them back). No imports: whoever only needs a name pays for nothing."""

MANIFEST = "manifest.json"  # the results model (results/model.py)
STATS = "stats.csv"  # per-event statistics (profiles/stat_rows.py)
SAMPLES = "samples.npz"  # the per-op samples stats.csv came from (results/samples.py): compare, report and store
# import read them, never an ETDump
NIGHT = "night.json"  # which night the run belongs to, its page and confirmations (results/night_marks.py)
VERDICTS = "verdicts.json"  # the comparison recorded beside the run (results/verdicts_file.py)
