"""The ground every package stands on: errors and exit codes, the cache and atomic writes, processes, progress,
light descriptive statistics, ids, words, device and model names, lazy imports, cleanup, whole files, YAML,
shipped resources, versions and scalar types. These modules import nothing of etfarm but each other (the layers
contract in pyproject.toml).

Nothing is imported here.
"""
