"""Experiment configs to RLlib/Ray Tune runs with MLflow tracking."""
