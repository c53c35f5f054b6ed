"""``xform.scipy.special``: special functions as compositions of ``xform.lax``, as in JAX.

Where a naive formula has a bad derivative (``xlogy`` at ``x == 0``, ``log_ndtr`` far in the
tail, ``logit`` near the ends) the function carries a ``custom_jvp`` with JAX's rule, so
gradients are finite wherever JAX's are. The gamma family builds on ``lax.lgamma``,
``lax.digamma``, ``lax.polygamma``, ``lax.igamma`` and ``lax.betainc``, whose derivatives are
registered with the primitives.

The rest follow JAX's algorithms (mostly Cephes'): rational approximations chosen per element
by ``where`` with safe arguments in the unused branches (``expi``, ``spence``, ``dawsn``,
``sici``, ``fresnel``, ``wofz``), and series and continued fractions as elementwise loops that
stop per element (``_while_active``: ``expn``, ``hyp1f1``, ``hyp2f1``); their derivatives are
``custom_jvp`` rules with JAX's formulas. Where JAX 0.10.2 departs from SciPy by mistake
(``expi(0)``, ``expn(n, 0)``) SciPy's values are returned.
"""

from xform.scipy.special import _basic, _hypergeometric, _integrals
from xform.scipy.special._basic import *  # noqa: F403
from xform.scipy.special._hypergeometric import *  # noqa: F403
from xform.scipy.special._integrals import *  # noqa: F403

__all__ = _basic.__all__ + _hypergeometric.__all__ + _integrals.__all__
