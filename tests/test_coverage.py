"""Every primitive has every rule it needs, or sits on an exemption list with the reason."""

import pytest

from lowering.mlir import lowering_rules
from xform import core, lax
from xform import random as _random  # noqa: F401  (registers random_gamma's lowering)
from xform.interpret import ad, batching
from xform.primitives.call import jit_p
from xform.primitives.pmap import pmap_p

PRIMITIVES = sorted(
    {v for v in vars(lax).values() if isinstance(v, core.Primitive)}
    | {v for v in vars(lax.linalg).values() if isinstance(v, core.Primitive)}
    | {jit_p, pmap_p},
    key=lambda p: p.name,
)

# Every primitive of lax.linalg calls a kernel (LAPACK on CPU) that NumPy does not mirror.
LAPACK_PRIMITIVES = {v.name for v in vars(lax.linalg).values() if isinstance(v, core.Primitive)}

# Primitives evaluated eagerly by XLA even on a CPU backend, and why.
NO_HOST_IMPL = {
    "erf": "no NumPy kernel; XLA's is the reference JAX users get",
    "erfc": "no NumPy kernel; XLA's is the reference JAX users get",
    "erf_inv": "no NumPy kernel; XLA's is the reference JAX users get",
    "lgamma": "no NumPy kernel; XLA's is the reference JAX users get",
    "digamma": "no NumPy kernel; XLA's is the reference JAX users get",
    "fft": "XLA's FFT kernel, compiled for the one equation: eager equals jit bit for bit",
    "random_gamma": "its rejection sampler compiled for the one equation, as under jit",
    "jit": "runs its compiled jaxpr: that is the point of jit",
    "custom_jvp_call": "evaluates its jaxpr eagerly (core.eager_rules)",
    "custom_vjp_call": "evaluates its jaxpr eagerly (core.eager_rules)",
    "cond": "runs the chosen branch's jaxpr eagerly (core.eager_rules)",
    "custom_linear_solve": "runs its solve jaxpr eagerly (core.eager_rules)",
    "custom_lin": "no forward evaluation: jvp of a custom_vjp function is an error, as in JAX",
    "while": "runs its cond and body jaxprs in a Python loop (core.eager_rules)",
    "scan": "runs its body jaxpr in a Python loop (core.eager_rules)",
    "remat2": "evaluates its jaxpr eagerly (core.eager_rules)",
    "pmap": "runs its SPMD program on the devices (core.eager_rules, xform/runtime/pmap.py)",
    **{
        name: "a LAPACK kernel, compiled by XLA for the one equation: eager equals jit"
        for name in LAPACK_PRIMITIVES
        if name != "symmetric_product"
    },
    # reduce_window family (windowed.py, reductions.py):
    **{
        name: "runs its traced reducer jaxpr: compiled by XLA for the one equation"
        for name in ("reduce", "reduce_window", "select_and_scatter")
    },
    "select_and_gather_add": "a variadic reduce_window whose tie order XLA defines: compiled "
    "for the one equation, eager equals jit",
    # special functions (special.py):
    **{
        name: "XLA's kernel (a CHLO op or JAX's series), compiled for the one equation"
        for name in (
            "igamma",
            "igammac",
            "igamma_grad_a",
            "regularized_incomplete_beta",
            "bessel_i0e",
            "bessel_i1e",
            "zeta",
            "polygamma",
        )
    },
    # contractions (dot.py, convolution.py):
    # elementwise/structural/indexing additions:
    # rng, compiler, sorting and collective additions:
    "rng_bit_generator": "XLA's RngBitGenerator, compiled for the one equation: JAX's bits",
    "rng_uniform": "XLA's stateful Rng, compiled for the one equation, as in JAX",
    "approx_top_k": "XLA's ApproxTopK (its exact fallback off TPU), compiled for the equation",
    "composite": "evaluates its decomposition jaxpr eagerly (core.eager_rules)",
    "pbroadcast": "a collective: only meaningful inside pmap or vmap, which replace it",
    "ragged_all_to_all": "a collective: only inside pmap or vmap; eagerly an error, as in JAX",
    **{
        name: "a collective: only meaningful inside pmap or vmap, which replace it"
        for name in (
            "psum",
            "pmax",
            "pmin",
            "all_gather",
            "psum_scatter",
            "ppermute",
            "all_to_all",
            "axis_index",
            "pvary",
        )
    },
    # sharding (sharding.py, shard_map.py):
    "sharding_constraint": "lays the array out on the mesh's devices (core.eager_rules)",
    "reshard": "lays the array out on the mesh's devices (core.eager_rules)",
    "shard_map": "runs as a partitioned jit over its mesh (core.eager_rules)",
}
NO_JVP_RULE = {
    "custom_lin": "only ever transposed (its transpose is the user's bwd rule)",
}
NO_BATCH_RULE = {
    "iota": "no operands, so nothing it gets is mapped: vmap hands it to the parent trace",
}
# Transpose rules are asserted per family in tests/test_grad_*.py, which list the linear ones.


def test_the_walk_finds_the_primitive_families():
    names = {p.name for p in PRIMITIVES}
    for expected in (
        "sin",
        "add",
        "broadcast_in_dim",
        "gather",
        "scatter-add",
        "reduce_sum",
        "sort",
        "dot_general",
        "conv_general_dilated",
        "jit",
        "pmap",
        "psum",
    ):
        assert expected in names
    assert len(PRIMITIVES) > 90


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_rules(prim):
    assert prim in core.abstract_eval_rules, f"{prim.name} has no abstract evaluation rule"
    assert prim in lowering_rules, f"{prim.name} has no lowering rule"
    if prim.name in NO_JVP_RULE:
        assert prim not in ad.jvp_rules, f"{prim.name} is exempt but has a JVP rule"
    else:
        assert prim in ad.jvp_rules, f"{prim.name} has no JVP rule"
    if prim.name in NO_HOST_IMPL:
        assert prim not in core.host_impls, f"{prim.name} is exempt but has a host impl"
        assert (
            prim.name not in ("custom_jvp_call", "custom_vjp_call", "custom_lin")
            or prim in core.eager_rules
        )
    else:
        assert prim in core.host_impls, f"{prim.name} has no NumPy host implementation"


@pytest.mark.parametrize("prim", PRIMITIVES, ids=lambda p: p.name)
def test_batch_rule(prim):
    if prim.name in NO_BATCH_RULE:
        assert prim not in batching.batch_rules, f"{prim.name} is exempt but has a batch rule"
    else:
        assert prim in batching.batch_rules or prim in batching.axis_rules, (
            f"{prim.name} has no batching rule"
        )
