"""The ``jax._src`` internals that optax, flax, equinox, chex and jaxtyping reach for, on xform.

Each entry of ``MODULES`` is one ``jax._src.<name>`` module as the libraries see it under
``xform.compat``: a table of the names they use. Only small, stable pieces are here, none of
them part of JAX's transformation machinery:

- ``traceback_util``: traceback filtering hooks (``register_exclusion``, ``api_boundary``,
  ``include_frame``). xform does not filter tracebacks, so they record paths and pass through.
- ``tree_util._registry``: JAX's pytree node registry, which xform shares (``xform.tree_util``
  is JAX's pure-Python tree utilities).
- ``dtypes``: ``xform.dtypes`` (with ``TypePromotionError``), the narrow ml_dtypes names as
  their scalar types, as JAX's.
- ``core``: the ``jax.core`` view of xform's IR (``xform.compat._jax_core``).
- ``state.types.AbstractRef``: a class nothing is an instance of (xform has no mutable refs).
- ``checkify``: the names flax binds at import time; calling ``checkify`` says xform lacks it.
- ``dispatch``, ``xla_bridge``: present, with no runtime-token or backend internals.

``LACKING`` are public ``jax`` modules of JAX's tracing internals that libraries bind at import
time (``jax.interpreters.partial_eval``, ``jax.extend.linear_util``,
``jax.experimental.checkify``, ``jax.experimental.hijax``): they import, classes they define can
be named or subclassed, and using what they hold says that xform lacks it. ``EXTRAS`` are names
that public modules have and their xform counterparts lack (``jax.config.parse_flags_with_absl``,
``jax.extend.core.get_opaque_trace_state``, ``jax.interpreters.ad.JVPTracer``, ...), answered
while compat mode is installed. ``ADDED_ATTRIBUTES`` are attributes xform's classes gain while
it is installed: a trace's ``main`` (itself), which equinox's ``filter_jvp`` compares.

``FALLBACKS`` stand in for public ``jax`` modules that xform does not have yet:
``jax.sharding`` is JAX's sharding description types (``Mesh``, ``PartitionSpec``,
``NamedSharding``, ...: data, no transformation), until ``xform.sharding`` exists;
``jax.experimental.layout`` is JAX's layout descriptions (``Format``, ``Layout``), which flax
names at import time; ``jax.lib`` is jaxlib's ``__version__``.

Left out (importing them raises an ``ImportError`` saying that xform lacks them): ``literals``
(equinox and jaxtyping fall back when it is absent), ``interpreters.pxla`` and ``earray`` (flax
then disables its fp8 extended-dtype path), ``compiler``'s contents (chex's
``restrict_backends`` imports the module; using it names what is lacking),
``api_util``, ``callback`` and everything else under ``jax._src``.
"""

import jax.experimental.layout as _jax_layout
import jax.lib as _jax_lib
import jax.sharding as _jax_sharding
import numpy as np
from jax._src.distributed import global_state as _distributed_state
from jax._src.tree_util import _registry as _jax_pytree_registry

from xform import api, api_util, core, dtypes, flatten_util, tree_util
from xform import numpy as xnp
from xform.compat import _jax_core
from xform.compat._standins import lacking_function, stand_in
from xform.extend import ad as _extend_ad
from xform.interpreters import ad as _ad
from xform.interpreters import transpose as _transpose
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


class JaxException(Exception):
    """``jax._src.checkify.JaxException``, for signatures that name it."""


class Error:
    """``jax._src.checkify.Error``, for signatures that name it."""


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
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{primitive.name}' not implemented")
    return rule


# What chex and flax bind from checkify at import time (error-category sets, classes for
# annotations); every function says that xform lacks it.
_CHECKIFY = {
    "checkify": lacking_function("jax.experimental.checkify.checkify"),
    "JaxException": JaxException, "Error": Error, "Out": object, "ErrorCategory": type,
    **{f"{kind}_checks": frozenset()
       for kind in ("user", "nan", "index", "div", "float", "automatic", "all")},
    **{name: lacking_function(f"jax.experimental.checkify.{name}")
       for name in ("check", "check_error", "debug_check")},
}

# ``jax.experimental.hijax``: flax.nnx defines its hijax Variable (off unless the
# ``flax_hijax_variable`` flag is set) at import time. Defining works; xform lacks the machinery.
_HIJAX = {
    "HiPrimitive": _Inert, "MutableHiType": _Inert, "AbstractValue": _Inert, "AvalQDD": _Inert,
    "AvalMutableQDD": _Inert, "Zero": stand_in("jax.experimental.hijax.Zero"),
    "aval_method": _aval_method, "aval_property": property, "register_hitype": _no_op,
    "control_flow_allowed_effects": _EffectTypeSet(),
    **{name: lacking_function(f"jax.experimental.hijax.{name}")
       for name in ("instantiate_zeros", "is_undefined_primal")},
}

# ``jax._src.ad_util``: the autodiff values and primitives everything else builds on.
_AD_UTIL = {
    "stop_gradient_p": autodiff.stop_gradient_p, "add_jaxvals_p": elementwise.add_any_p,
    "add_any_p": elementwise.add_any_p, "add_jaxvals": elementwise.add_any,
    "Zero": _ad.Zero, "instantiate": _ad.instantiate, "zeros_like_aval": _extend_ad.zeros_like_aval,
    "zeros_like_jaxval": lambda x: _extend_ad.zeros_like_aval(core.get_aval(x)),
}

MODULES = {
    "traceback_util": {"register_exclusion": register_exclusion, "include_frame": include_frame,
                       "api_boundary": api_boundary, "_exclude_paths": _excluded_paths},
    "tree_util": {**{k: v for k, v in vars(tree_util).items() if not k.startswith("__")},
                  "_registry": _jax_pytree_registry},
    "ad_util": _AD_UTIL,
    "flatten_util": {"ravel_pytree": flatten_util.ravel_pytree},
    "api_util": {k: v for k, v in vars(api_util).items() if not k.startswith("__")},
    "api": {"jit": api.jit, "eval_shape": api.eval_shape, "ShapeDtypeStruct": api.ShapeDtypeStruct},
    "distributed": {"global_state": _distributed_state},
    # JAX's private dtypes module names the ml_dtypes types by their scalar types (as
    # jax.dtypes.bfloat16 is); xform.dtypes keeps the narrow ones as dtype instances.
    "dtypes": {**vars(dtypes), **{d.name: d.type for d in dtypes.NARROW_FLOATS +
                                  dtypes.NARROW_INTS},
               "ExtendedDType": ExtendedDType, "DType": np.dtype,
               "finfo": xnp.finfo, "iinfo": xnp.iinfo},
    "core": {**vars(_jax_core), "trace_state_clean": trace_state_clean,
             "physical_aval": physical_aval},
    "state": {},
    "state.types": {"AbstractRef": AbstractRef},
    "checkify": _CHECKIFY,
    "dispatch": {"wait_for_tokens": wait_for_tokens},
    "compiler": {},  # chex's restrict_backends patches its internals: they are lacking
    "xla_bridge": {"_backends": {}},
    "interpreters": {},
    "interpreters.ad": {**{k: v for k, v in vars(_extend_ad).items() if not k.startswith("__")},
                        "JVPTracer": _ad.JVPTracer, "JVPTrace": _ad.JVPTrace,
                        "get_primitive_transpose": get_primitive_transpose},
}

FALLBACKS = {
    "jax.sharding": {k: v for k, v in vars(_jax_sharding).items() if not k.startswith("_")},
    "jax.experimental.layout": {k: v for k, v in vars(_jax_layout).items()
                                if not k.startswith("_")},
    # JAX's ``jax.lib`` holds only jaxlib's version now (equinox's tests import it).
    "jax.lib": {"__version__": _jax_lib.__version__},
}

# Public ``jax`` modules of JAX's tracing internals: libraries bind them (and name a class or two
# in annotations) at import time; xform lacks what is in them.
LACKING = {
    "jax.experimental.checkify": _CHECKIFY,
    "jax.interpreters.partial_eval": {},
    "jax.experimental.hijax": _HIJAX,
    # JAX's former names for what xform runs its own way (a primitive eagerly, pjit as jit).
    "jax.interpreters.xla": {"apply_primitive": lambda prim, *args, **params: prim.bind(
        *args, **params), "canonicalize_dtype_handlers": {}},
    "jax.experimental.pjit": {"pjit": api.jit},
}

# Names that public ``jax`` modules have and xform's counterparts lack, added under compat mode
# (the xform module's ``__getattr__`` answers them while compat mode is installed).
EXTRAS = {
    "jax.extend.source_info_util": {"register_exclusion": register_exclusion},
    "jax.extend.core": {"Effect": _Inert,
                        "get_opaque_trace_state": _jax_core.get_opaque_trace_state},
    "jax.experimental": {"MutableArray": stand_in("jax.experimental.MutableArray")},
    # xform.extend.ad stands for jax.interpreters.ad; it is patched under the name it is first
    # reached by, which may be jax.extend.ad.
    **dict.fromkeys(("jax.interpreters.ad", "jax.extend.ad"),
                    {"JVPTracer": _ad.JVPTracer, "JVPTrace": _ad.JVPTrace,
                     "add_jaxvals_p": elementwise.add_any_p, "add_jaxvals": elementwise.add_any,
                     "add_tangents": elementwise.add_any,
                     "get_primitive_transpose": get_primitive_transpose}),
}


def _trace_main(trace):
    # JAX's traces still answer ``main`` (their ``tag``: one per transformation call), and
    # equinox's filter_jvp compares it to tell its own tracers from others. An xform trace
    # is one transformation call: it stands for itself.
    return trace


# Attributes that xform's classes gain while compat mode is installed: (class, name, value).
ADDED_ATTRIBUTES = [(core.Trace, "main", property(_trace_main))]
