"""The semi-internal JAX names libraries reach for, as xform's own objects.

The table was built from what numpyro, blackjax, dm-haiku, chex, orbax, penzai, jraph, flax,
optax, equinox, jaxtyping, diffrax, lineax, optimistix, distrax and jaxopt import (every name
used by two of them, or by one at import time). None of it is JAX's transformation machinery:

- ``MODULES``: ``jax._src.<name>`` modules as the libraries see them. ``traceback_util``
  (filtering hooks that record paths and pass through), ``tree_util`` (xform's, on JAX's
  pytree registry, which xform shares), ``dtypes``, ``core`` (``xform.compat._jax_core``, with
  the trace-state queries), ``ad_util`` (the stop-gradient and tangent-sum primitives, Zero),
  ``flatten_util``, ``api_util`` (``xform.api_util``), ``interpreters.ad``, ``checkify``
  (``xform.experimental.checkify``), ``dispatch.wait_for_tokens``, ``distributed``'s runtime
  state (jaxlib's, which xform runs on).
- ``LACKING``: public ``jax`` modules that xform has no module for but libraries import:
  ``jax.interpreters.partial_eval`` and ``jax.experimental.hijax`` (classes to subclass at
  import time), ``jax.interpreters.xla`` (``apply_primitive``), ``jax.experimental.pjit``
  (``pjit`` is ``jit``).
- ``EXTRAS``: names that public modules have and their xform counterparts lack
  (``jax.extend.core.get_opaque_trace_state``, ``jax.interpreters.ad.JVPTracer``, ...),
  answered while compat mode is installed. ``ADDED_ATTRIBUTES``: attributes xform's classes
  gain while it is installed (a trace's ``main``, itself, which equinox's ``filter_jvp`` reads).
- ``FALLBACKS``: public ``jax`` modules of plain data xform does not define
  (``jax.sharding``'s description types, ``jax.experimental.layout``, ``jax.lib``'s version).

Every other name that JAX 0.10.2 has resolves to a stand-in that fails where it is used
(``_standins.py``).
"""

import jax.experimental.layout as _jax_layout
import jax.lib as _jax_lib
import jax.sharding as _jax_sharding
import numpy as np
from jax._src.distributed import global_state as _distributed_state
from jax._src.tree_util import _registry as _jax_pytree_registry

from xform import api_util, core, dtypes, flatten_util, tree_util
from xform import numpy as xnp
from xform.api import jit as api
from xform.compat import _jax_core
from xform.compat._standins import lacking_function, stand_in
from xform.experimental import checkify
from xform.extend import ad as _extend_ad
from xform.interpret import ad as _ad
from xform.interpret import transpose as _transpose
from xform.primitives import autodiff, elementwise

_excluded_paths = []


def register_exclusion(path):
    """Records a path whose frames JAX would hide from tracebacks (xform shows them all)."""
    _excluded_paths.append(path)


def include_frame(frame):
    """Whether a traceback frame is outside the excluded paths."""
    return not any(frame.f_code.co_filename.startswith(p) for p in _excluded_paths)


def api_boundary(fun=None, **_):
    """JAX's traceback-filtering decorator; xform leaves the function as it is."""
    if fun is None:
        return lambda f: f
    return fun


class AbstractRef:
    """``jax._src.state.types.AbstractRef``: xform has no mutable array refs, so no value is
    an instance of this class."""


class ExtendedDType:
    """``jax._src.dtypes.ExtendedDType``: the base of the dtypes that libraries define (flax's
    fp8 meta dtype). xform's operations do not accept them; defining one works."""

    type = dtypes.extended


class _Inert:
    """A base class standing for a JAX internal one: subclassing it works, nothing more."""

    def __init__(self, *args, **kwargs):
        del args, kwargs

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__()


class _EffectTypeSet:
    """``control_flow_allowed_effects`` and the like: xform has no effect system to extend."""

    def add_type(self, effect_type):
        del effect_type


def _aval_method(fun):
    return fun


def _no_op(*args, **kwargs):
    del args, kwargs


def wait_for_tokens():
    """``jax._src.dispatch.wait_for_tokens``: JAX blocks here until the ordered effects of
    earlier calls are done. xform's ordered host callbacks complete within their program's
    call, so no runtime token is left to wait for."""


def trace_state_clean():
    """Whether no transformation is active (eager evaluation, no named axis in scope)."""
    state = core.trace_state
    return state.trace is core.eval_trace and not state.axis_env


def physical_aval(aval):
    """The aval of the data behind ``aval``: the aval itself (xform's extended dtypes, the
    typed keys, keep their data in their own arrays)."""
    return aval


def get_primitive_transpose(primitive):
    """``primitive``'s transpose rule; ``NotImplementedError`` naming it when it has none."""
    rule = _transpose.transpose_rules.get(primitive)
    if rule is None:
        raise NotImplementedError(
            f"Transpose rule (for reverse-mode differentiation) for "
            f"'{primitive.name}' not implemented"
        )
    return rule


# ``jax.experimental.hijax``: flax.nnx defines its hijax Variable (off unless the
# ``flax_hijax_variable`` flag is set) at import time. Defining works; xform lacks the machinery.
_HIJAX = {
    "HiPrimitive": _Inert,
    "MutableHiType": _Inert,
    "AbstractValue": _Inert,
    "AvalQDD": _Inert,
    "AvalMutableQDD": _Inert,
    "Zero": stand_in("jax.experimental.hijax.Zero"),
    "aval_method": _aval_method,
    "aval_property": property,
    "register_hitype": _no_op,
    "control_flow_allowed_effects": _EffectTypeSet(),
    **{
        name: lacking_function(f"jax.experimental.hijax.{name}")
        for name in ("instantiate_zeros", "is_undefined_primal")
    },
}

# ``jax._src.ad_util``: the autodiff values and primitives everything else builds on.
_AD_UTIL = {
    "stop_gradient_p": autodiff.stop_gradient_p,
    "add_jaxvals_p": elementwise.add_any_p,
    "add_any_p": elementwise.add_any_p,
    "add_jaxvals": elementwise.add_any,
    "Zero": _ad.Zero,
    "instantiate": _ad.instantiate,
    "zeros_like_aval": _extend_ad.zeros_like_aval,
    "zeros_like_jaxval": lambda x: _extend_ad.zeros_like_aval(core.get_aval(x)),
}

MODULES = {
    "traceback_util": {
        "register_exclusion": register_exclusion,
        "include_frame": include_frame,
        "api_boundary": api_boundary,
        "_exclude_paths": _excluded_paths,
    },
    "tree_util": {
        **{k: v for k, v in vars(tree_util).items() if not k.startswith("__")},
        "_registry": _jax_pytree_registry,
    },
    "ad_util": _AD_UTIL,
    "flatten_util": {"ravel_pytree": flatten_util.ravel_pytree},
    "api_util": {k: v for k, v in vars(api_util).items() if not k.startswith("__")},
    "api": {"jit": api.jit, "eval_shape": api.eval_shape, "ShapeDtypeStruct": api.ShapeDtypeStruct},
    "distributed": {"global_state": _distributed_state},
    # JAX's private dtypes module names the ml_dtypes types by their scalar types (as
    # jax.dtypes.bfloat16 is); xform.dtypes keeps the narrow ones as dtype instances.
    "dtypes": {
        **vars(dtypes),
        **{d.name: d.type for d in dtypes.NARROW_FLOATS + dtypes.NARROW_INTS},
        "ExtendedDType": ExtendedDType,
        "DType": np.dtype,
        "finfo": xnp.finfo,
        "iinfo": xnp.iinfo,
    },
    "core": {
        **vars(_jax_core),
        "trace_state_clean": trace_state_clean,
        "physical_aval": physical_aval,
    },
    "state": {},
    "state.types": {"AbstractRef": AbstractRef},
    "checkify": {k: v for k, v in vars(checkify).items() if not k.startswith("__")},
    "dispatch": {"wait_for_tokens": wait_for_tokens},
    "compiler": {},  # chex's restrict_backends patches its internals: they are lacking
    "xla_bridge": {"_backends": {}},
    "interpreters": {},
    "interpreters.ad": {
        **{k: v for k, v in vars(_extend_ad).items() if not k.startswith("__")},
        "JVPTracer": _ad.JVPTracer,
        "JVPTrace": _ad.JVPTrace,
        "get_primitive_transpose": get_primitive_transpose,
    },
}

FALLBACKS = {
    "jax.sharding": {k: v for k, v in vars(_jax_sharding).items() if not k.startswith("_")},
    "jax.experimental.layout": {
        k: v for k, v in vars(_jax_layout).items() if not k.startswith("_")
    },
    # JAX's ``jax.lib`` holds only jaxlib's version now (equinox's tests import it).
    "jax.lib": {"__version__": _jax_lib.__version__},
}

# Public ``jax`` modules of JAX's tracing internals: libraries bind them (and name a class or two
# in annotations) at import time; xform lacks what is in them.
LACKING = {
    "jax.interpreters.partial_eval": {},
    "jax.experimental.hijax": _HIJAX,
    # JAX's former names for what xform runs its own way (a primitive eagerly, pjit as jit).
    "jax.interpreters.xla": {
        "apply_primitive": lambda prim, *args, **params: prim.bind(*args, **params),
        "canonicalize_dtype_handlers": {},
    },
    "jax.experimental.pjit": {"pjit": api.jit},
}

# Names that public ``jax`` modules have and xform's counterparts lack, added under compat mode
# (the xform module's ``__getattr__`` answers them while compat mode is installed).
EXTRAS = {
    "jax.extend.source_info_util": {"register_exclusion": register_exclusion},
    "jax.extend.core": {
        "Effect": _Inert,
        "get_opaque_trace_state": _jax_core.get_opaque_trace_state,
    },
    "jax.experimental": {"MutableArray": stand_in("jax.experimental.MutableArray")},
    # xform.extend.ad stands for jax.interpreters.ad; it is patched under the name it is first
    # reached by, which may be jax.extend.ad.
    **dict.fromkeys(
        ("jax.interpreters.ad", "jax.extend.ad"),
        {
            "JVPTracer": _ad.JVPTracer,
            "JVPTrace": _ad.JVPTrace,
            "add_jaxvals_p": elementwise.add_any_p,
            "add_jaxvals": elementwise.add_any,
            "add_tangents": elementwise.add_any,
            "get_primitive_transpose": get_primitive_transpose,
        },
    ),
}


def _trace_main(trace):
    # JAX's traces still answer ``main`` (their ``tag``: one per transformation call), and
    # equinox's filter_jvp compares it to tell its own tracers from others. An xform trace
    # is one transformation call: it stands for itself.
    return trace


# Attributes that xform's classes gain while compat mode is installed: (class, name, value).
ADDED_ATTRIBUTES = [(core.Trace, "main", property(_trace_main))]
