"""Regression verdicts: is run B slower than run A, per device and model, end to end and per op?

    statistics.estimate / estimate_many / decide / adjust_p_values, Verdict, VerdictSettings, Center
                                                      the method (states.py: the fast-state statistic, the
                                                      default; bootstrap.py: the resampling of mean and fast;
                                                      ranks.py: Mann-Whitney U, Benjamini-Hochberg)
    centers/ (mean.py, fast.py, fast_state.py)       the statistics a side is reduced to (--center), one module
                                                      each, registered (a new one is one module)
    below.below_threshold(est, p, verdict, threshold) -> BelowThreshold   a confident change under the threshold
    compare.compare_jobs(A, B) / compare_against(B, finder) / compare_sides -> Comparison, PairVerdict
    likeness.model_settings / setting_differences / side_gap   what must match (backend, iterations, warmup,
                                                      threads, ...) and whether a side is whole
    op_samples.read_op_samples(etdumps) -> OpSamples  a side's per-op samples
    baseline.compare_refs(A, B, settings)             `etfarm compare [A] [B]`: which runs, against what
    baseline.last_good_finder(store, job) / named_finder / recorded.record_verdicts      which run is A
    noise.estimate_replicate_floor(job statistics, groups) -> NoiseFloor; baseline.history_noise_finder(store,
                                                      job, center): the series' noise floor from replicate runs
    device_states.device_states(known, jobs) -> DeviceStates; baseline.device_states_finder(store): how far apart a
                                                      device's jobs of a model ran in speed states (`compare`)
    series.judge(history, night, settings) -> SeriesVerdict; baseline.series_history(store, job, device, model)
                                                      the night against its series' reference (change points)
    ab.run_ab(...) -> AbOutcome                       `run --ab`: ABBA in one job, --until-confident
    nightly_plan.load_plan, nightly.run_nightly -> NightlyOutcome  `nightly --plan`
    changes.find_changes(points) -> [SeriesChanges]   `history --changes` (ruptures PELT), per series (configuration)
    likeness.SeriesKey.of(job, device, model)         a series: device, model name, SETTINGS

Nothing is imported here: numpy, scipy, pandas and ruptures load inside the functions that need them.
"""
