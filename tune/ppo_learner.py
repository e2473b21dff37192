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
- **One finiteness check per update.** Before each step RLlib asks every gradient
  ``torch.isfinite(grad).all()`` -- twice, once to zero non-finite values and once to
  decide whether to step -- each answer a separate reduction and a sync: 108 for the
  demo's 54 parameter tensors, about a tenth of an update's time on 2 CPU threads. The
  total norm of all gradients (one fused ``foreach`` norm) is finite only if every
  gradient is; then the gradients are set and the optimizers step, which is what RLlib
  does when every check passes. Otherwise -- a non-finite gradient, or a norm that
  overflowed -- and whenever gradient scalers or learning-rate schedulers are configured,
  RLlib's own method runs.

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
    """PPO's torch learner: fused Adam, the batch built without autograd, one finiteness
    check per update (see above)."""

    def configure_optimizers_for_module(self, module_id: str, config: Any = None) -> None:
        """One fused Adam per module, at the configured learning rate (or schedule)."""
        params = self.get_parameters(self._module[module_id])
        self.register_optimizer(
            module_id=module_id,
            optimizer=fused_adam(params),
            params=params,
            lr_or_lr_schedule=config.lr,
        )

    def apply_gradients(self, gradients_dict: Any) -> None:
        """Set the gradients and step, after one fused finiteness check (module doc)."""
        import torch

        grads = [grad for grad in gradients_dict.values() if grad is not None]
        plain = self._grad_scalers is None and self._lr_scheduler_classes is None
        if (
            not plain
            or not grads
            or not bool(torch.isfinite(torch.nn.utils.get_total_norm(grads, foreach=True)))
        ):
            super().apply_gradients(gradients_dict)
            return
        for parameter_id, grad in gradients_dict.items():
            self._params[parameter_id].grad = grad
        for module_id, optimizer_names in self._module_optimizers.items():
            for optimizer_name in optimizer_names:
                self.get_optimizer(module_id, optimizer_name).step()

    def _make_batch_if_necessary(self, training_data: Any) -> Any:
        """RLlib's batch building (connectors, GAE's value pass) without a graph."""
        import torch

        with torch.no_grad():
            return super()._make_batch_if_necessary(training_data)
