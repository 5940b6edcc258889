"""The record of a finished run: the results model (written and read by base/codec.py), and what a job leaves in
its run directory, read back by everything after it (below the engine: nothing here imports run/).

    model: Job, DeviceResult, ModelResult, ProcessRun (runs.py), statuses, load_manifest   manifest.json
    record: RunRecord(root, job=None)          manifest, stats rows, samples, verdicts: each read when first asked
    samples: write_samples, read_samples, pair_samples, joined_runs   DIR/samples.npz, the per-op samples
    verdicts_file: recorded_pairs              DIR/verdicts.json, read typed through the codec
    layout: MANIFEST, STATS, SAMPLES, VERDICTS the run directory's top-level file names
    job_config, accuracy, conditions, contention, energy_figures, footprint, llm_figures, limits: the parts of the
    model (settings, output accuracy, device state, CPU contention, energy, memory, LLM figures, bounds)
"""
