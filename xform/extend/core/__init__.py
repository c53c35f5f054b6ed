"""The IR and the primitive machinery, as ``jax.extend.core`` names them."""

from xform.core import (  # noqa: F401
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    Primitive,
    ShapedArray,
    Var,
    check_jaxpr,
    eval_jaxpr,
    jaxpr_as_fun,
    set_current_trace,
)
from xform.errors import JaxprTypeError  # noqa: F401
from xform.extend._core import (  # noqa: F401
    DropVar,
    TraceTag,
    array_types,
    call_impl,
    concrete_or_error,
    find_top_trace,
    gensym,
    jaxprs_in_params,
    mapped_aval,
    new_jaxpr_eqn,
    no_effects,
    primal_dtype_to_tangent_dtype,
    subjaxprs,
    take_current_trace,
    unmapped_aval,
    valid_jaxtype,
)
from xform.extend._core import nonempty_axis_env as nonempty_axis_env_DO_NOT_USE  # noqa: F401
from xform.extend._core import (  # noqa: F401
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
)
from xform.extend._core import (  # noqa: F401
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
)
from xform.extend._core import (  # noqa: F401
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE,
)
from xform.extend.core import primitives  # noqa: F401
from xform.extend.linear_util import DebugInfo  # noqa: F401
from xform.primitives.call import CallPrimitive  # noqa: F401
