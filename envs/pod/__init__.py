"""Parts of the per-pod multi-agent environment: config, layout, decisions, observations."""
