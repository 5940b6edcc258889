"""The record of a finished run: what a job leaves in its run directory, read back by everything after it.

    samples: write_samples(path, stats), read_samples(path) -> SamplesFile, pair_samples(path, device, model),
             joined_runs(pieces) -> SampleSet   the per-op samples file (DIR/samples.npz) and its runs joined
"""
