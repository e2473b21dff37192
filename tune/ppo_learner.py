"""PPO's torch learner with the per-update overheads of small networks taken out.

:class:`LeanPPOTorchLearner` computes what RLlib's ``PPOTorchLearner`` computes -- the
same loss, the same optimizer, the same batches -- and differs only in how:

- **Fused Adam.** RLlib builds ``torch.optim.Adam(params)``; on a CPU that is the
  per-parameter loop (``_single_tensor_adam``), a dozen small tensor operations per
  parameter tensor and step. The demo's network has 54 parameter tensors and takes 64
  steps an iteration, so the loop was about a tenth of learning. ``fused=True`` runs the
  same update rule (same defaults: betas, eps, no weight decay) in one kernel over all
  of them; results agree to float32 rounding.
- **No autograd graph while building the batch.** The learner connector pipeline runs
  the critic over the whole train batch for GAE (``compute_values``) with gradients
  enabled, recording a graph for 4,000 samples that nothing differentiates. The pipeline
  only produces data, so it runs under ``torch.no_grad()``.

:func:`tune.rllib_config.algorithm_config` installs it for every PPO experiment;
:class:`tune.anchor.AnchoredPPOTorchLearner` builds on it.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner


def fused_adam(params: list[Any]) -> Any:
    """``torch.optim.Adam`` over ``params`` with torch's defaults, as one fused kernel."""
    import torch

    return torch.optim.Adam(params, fused=True)


class LeanPPOTorchLearner(PPOTorchLearner):
    """PPO's torch learner: fused Adam, and the batch built without autograd (see above)."""

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """One fused Adam per module, at the configured learning rate (or schedule)."""
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=fused_adam(params),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def _make_batch_if_necessary(self, training_data: Any) -> Any:
        """RLlib's batch building (connectors, GAE's value pass) without a graph."""
        import torch

        with torch.no_grad():
            return super()._make_batch_if_necessary(training_data)
