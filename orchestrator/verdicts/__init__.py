"""Regression verdicts: is run B slower than run A, per device and model, end to end and per op?

    statistics.estimate / estimate_many / decide / adjust_p_values, Verdict, VerdictSettings, Center
                                                      the method (bootstrap.py: the resampling;
                                                      ranks.py: Mann-Whitney U, Benjamini-Hochberg)
    compare.compare_jobs(A, B) / compare_against(B, finder) / compare_sides -> Comparison, PairVerdict
    likeness.model_settings / setting_differences / side_gap   what must match (backend, iterations, warmup,
                                                      threads, ...) and whether a side is whole
    op_samples.read_op_samples(etdumps) -> OpSamples  a side's per-op samples
    baseline.compare_refs(A, B, settings)             `etfarm compare [A] [B]`: which runs, against what
    baseline.last_good_finder(store, job) / named_finder / record_verdicts       which run is A
    noise.estimate_floor(job statistics) -> NoiseFloor; baseline.history_noise_finder(store, job, center)
                                                      the device's noise floor from stored good runs
    ab.run_ab(...) -> AbOutcome                       `run --ab`: ABBA in one job, --until-confident
    nightly_plan.load_plan, nightly.run_nightly -> NightlyOutcome  `nightly --plan`
    changes.find_changes(points) -> [SeriesChanges]    `history --changes` (ruptures PELT)

Nothing is imported here: numpy, scipy, pandas and ruptures load inside the functions that need them.
"""
