"""The model zoo (docs/guide/model-zoo.md): real architectures with seeded random weights, no download."""
