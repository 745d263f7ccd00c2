"""Dynamic trivializations with any torch.optim optimizer.

Lezcano-Casado, "Trivializations for Gradient-Based Optimization on Manifolds" (NeurIPS 2019):
optimize A in B = base @ exp(A) without constraints, and every K optimizer steps move the base
to the current point (base <- base @ exp(A), A <- 0). K = 1 is Riemannian gradient descent
along the exponential map, K = inf the static trivialization (expRNN's B = exp(A)).

    opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    dtriv = DynamicTrivialization(opt, model, K=100)   # a step post-hook on the optimizer
    ... opt.step() ...                                 # nothing else changes in the loop

Every `reproject_every` base changes the base is re-projected onto the group (Newton-Schulz
towards the polar factor), so that rounding in the products base @ exp(A) does not accumulate
over many thousands of steps.
"""
import math

from .parametrizations import manifold_parametrizations, update_base


class DynamicTrivialization:
    def __init__(self, optimizer, module, K=100, reproject_every=100):
        if K is not None and K != math.inf and (int(K) != K or K < 1):
            raise ValueError(f"K must be a positive integer, None or math.inf, got {K!r}")
        if not manifold_parametrizations(module):
            raise ValueError("DynamicTrivialization: the module has no manifold parametrization")
        self.optimizer = optimizer
        self.module = module
        self.K = None if K is None or K == math.inf else int(K)
        self.reproject_every = reproject_every
        self.steps = 0
        self.base_updates = 0
        self._handle = optimizer.register_step_post_hook(self._after_step)

    def _after_step(self, optimizer, args, kwargs):
        self.steps += 1
        if self.K is not None and self.steps % self.K == 0:
            self.base_updates += 1
            rep = bool(self.reproject_every) and self.base_updates % self.reproject_every == 0
            update_base(self.module, reproject=rep)

    def remove(self):
        """Detach the hook from the optimizer."""
        self._handle.remove()

    def state_dict(self):
        return {"steps": self.steps, "base_updates": self.base_updates, "K": self.K}

    def load_state_dict(self, d):
        self.steps, self.base_updates = d["steps"], d["base_updates"]
