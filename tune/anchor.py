"""PPO anchored to the cloned policy: ``loss = PPO's loss + beta * KL(clone || policy)``.

After the imitation warm start (:mod:`tune.imitation`) PPO improves the clone for a few
iterations and then drifts away from it (README "What PPO adds"). PPO's own KL term
(``use_kl_loss``) only keeps each update near the policy that sampled the batch, so the
drift adds up over iterations. This learner adds a second term that keeps the policy near
the *fixed* warm-start module on the states it visits: the mean over the batch of
``KL(pi_clone(.|s) || pi(.|s))`` times ``warm_start.anchor`` (the experiment config's
coefficient; :func:`tune.rllib_config.algorithm_config` installs the learner when it is
above 0). The direction penalizes the policy for dropping actions the clone takes; it is
0 where the two agree. The frozen clone runs one extra forward pass per minibatch.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.core.columns import Columns

from tune.ppo_learner import LeanPPOTorchLearner

#: ``learner_config_dict`` keys: the warm-start module's folder and the coefficient.
ANCHOR_PATH = "anchor_path"
ANCHOR_COEFF = "anchor_coeff"
#: The metric logged per module: the batch's mean KL(clone || policy).
ANCHOR_KL_KEY = "anchor_kl"


def anchor_kl(anchor_logits: Any, logits: Any) -> Any:
    """Per row, ``KL(softmax(anchor_logits) || softmax(logits))`` over the last axis.

    Masked actions carry logits near float32's minimum in both (their probability is 0
    under the anchor), so their terms are dropped rather than computed as ``0 * (big -
    big)``.
    """
    import torch

    anchor_log = torch.log_softmax(anchor_logits, dim=-1)
    log = torch.log_softmax(logits, dim=-1)
    anchor_probability = anchor_log.exp()
    terms = torch.where(
        anchor_probability > 0,
        anchor_probability * (anchor_log - log),
        torch.zeros_like(anchor_log),
    )
    return terms.sum(dim=-1)


class AnchoredPPOTorchLearner(LeanPPOTorchLearner):
    """PPO's (lean) torch learner plus ``anchor_coeff * KL(anchor || policy)`` per module."""

    def build(self) -> None:
        """Build PPO's learner, then load the frozen anchor module (one for all modules:
        every module starts from the same warm-start folder)."""
        super().build()
        from ray.rllib.core.rl_module.rl_module import RLModule

        settings = self.config.learner_config_dict
        if ANCHOR_PATH not in settings or ANCHOR_COEFF not in settings:
            raise ValueError(
                f"{type(self).__name__} needs learner_config_dict keys {ANCHOR_PATH!r} "
                f"(the warm-start module's folder) and {ANCHOR_COEFF!r}; got "
                f"{sorted(settings)}"
            )
        self._anchor_coeff = float(settings[ANCHOR_COEFF])
        anchor = RLModule.from_checkpoint(str(settings[ANCHOR_PATH]))
        # Loaded on the CPU; the batches it reads are on the learner's device (a GPU).
        anchor.to(self._device)
        anchor.eval()
        for parameter in anchor.parameters():
            parameter.requires_grad_(False)
        self._anchor = anchor

    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        """PPO's loss for ``module_id`` plus the anchor term (rows PPO masks out of its
        loss are masked out of this term too)."""
        import torch

        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        with torch.no_grad():
            anchor_out = self._anchor.forward_train({Columns.OBS: batch[Columns.OBS]})
        kl = anchor_kl(anchor_out[Columns.ACTION_DIST_INPUTS], fwd_out[Columns.ACTION_DIST_INPUTS])
        if Columns.LOSS_MASK in batch:
            mask = batch[Columns.LOSS_MASK]
            mean_kl = kl[mask].sum() / mask.sum()
        else:
            mean_kl = kl.mean()
        self.metrics.log_value((module_id, ANCHOR_KL_KEY), mean_kl.detach(), window=1)
        return loss + self._anchor_coeff * mean_kl
