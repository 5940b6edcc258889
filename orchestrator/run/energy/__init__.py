"""Energy per inference (issue 39): a device's power sensor read around the model's untraced executions.

    sensors.py    which sensor a device has (ODPM, the Pi 5's PMIC, RAPL, hwmon) and each one's parser
    integrate.py  samples -> energy above idle per inference, per rail, with an interval over phases
    phase.py      the phase on the device: idle first, then the runner for long enough, sampled
ModelEnergy, what the manifest keeps (`devices.<d>.models.<m>.energy`), is results/energy_figures.py (below
results.py, which this package is above).

See docs/guide/memory-and-energy.md.
"""
