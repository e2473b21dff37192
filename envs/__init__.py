"""Simulated GPU clusters: topologies, workloads, simulator, schedulers, RL environments."""
