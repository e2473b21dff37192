"""torch / torch_geometric networks and RLlib RLModules of the schedulers."""
