"""``pod_scheduling_v0`` (paper 001): :mod:`envs.pod.env` documents it.

``env`` (the PettingZoo environment), ``config``, ``layout``, ``decisions``,
``observations``, ``rewards``, ``room`` and ``heuristic`` (the simulator's schedulers
driving the agents).
"""
