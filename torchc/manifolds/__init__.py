"""torchc.manifolds — optimization on orthogonal and unitary groups and Stiefel manifolds.

Maps (functional.py): matrix_exp with a fast backward, matrix_exp_parts (complex exp from real
parts, compiled as a real graph op), matrix_exp_vjp, cayley, skew, project, orthonormalize (one
Newton-Schulz step: single-precision results of the maps are orthonormal to ~5e-7).
Parametrizations for torch.nn.utils.parametrize (parametrizations.py): Orthogonal, SO,
Unitary, Stiefel, UnitaryStiefel; helpers orthogonal(), special_orthogonal(), unitary(),
stiefel(); initializers henaff_init_, cayley_init_, haar_init_, torus_init_; update_base().
Dynamic trivializations (dtriv.py): DynamicTrivialization(optimizer, module, K).
Models (rnn.py): ModReLU, ExpRNN (orthogonal recurrent kernel, B computed once per forward),
LSTM baseline.

Papers: Lezcano-Casado and Martínez-Rubio, "Cheap Orthogonal Constraints in Neural Networks"
(ICML 2019); Lezcano-Casado, "Trivializations for Gradient-Based Optimization on Manifolds"
(NeurIPS 2019).
"""
from .dtriv import DynamicTrivialization
from .functional import (cayley, matrix_exp, matrix_exp_parts, matrix_exp_vjp, orthonormalize, project,
                         single_precision, skew)
from .parametrizations import (SO, Orthogonal, Stiefel, Unitary, UnitaryStiefel, cayley_init_, haar_init_,
                               henaff_init_, manifold_parametrizations, orthogonal, special_orthogonal,
                               stiefel, torus_init_, unitary, update_base)
from .rnn import LSTM, ExpRNN, ExpRNNCell, ModReLU

__all__ = ["matrix_exp", "matrix_exp_parts", "matrix_exp_vjp", "cayley", "skew", "project", "orthonormalize",
           "single_precision", "Stiefel", "Orthogonal", "SO",
           "Unitary", "UnitaryStiefel", "orthogonal", "special_orthogonal", "unitary", "stiefel",
           "henaff_init_", "cayley_init_", "haar_init_", "torus_init_", "update_base",
           "manifold_parametrizations", "DynamicTrivialization", "ModReLU", "ExpRNNCell", "ExpRNN", "LSTM"]
