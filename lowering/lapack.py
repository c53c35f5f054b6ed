"""Calls to jaxlib's LAPACK kernels (typed FFI custom calls registered in the CPU client).

The facts, read off JAX 0.10.2's lowered modules: the target is ``lapack_<t><routine>_ffi``
with ``t`` in s/d/c/z for float32/float64/complex64/complex128; the kernel's attributes go in
an ``mhlo.backend_config`` dictionary (so ``api_version`` is 1 and ``backend_config`` the
empty string); ``mhlo.frontend_attributes`` says how many leading dimensions are batch
dimensions; matrices are passed column-major (layout ``(r-2, r-1, r-3, ..., 0)``), vectors
and per-matrix scalars row-major; outputs that overwrite an input alias it. Most kernels
also return LAPACK's ``info`` per matrix; JAX turns a failed matrix's results into NaN.
"""

import numpy as np
from jaxlib.cpu import _lapack
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from lowering import runtime
from lowering.mlir import aval_to_ir, full_like_aval
from xform import dtypes

_PREFIX = {dtypes.float32: "s", dtypes.float64: "d", dtypes.complex64: "c", dtypes.complex128: "z"}


def target(routine, dtype):
    """``lapack_sgetrf_ffi`` and friends: the kernel for ``routine`` on ``dtype``."""
    if runtime.platform() != "cpu":
        raise NotImplementedError(
            f"xform lowers {routine} to jaxlib's LAPACK kernels, which run on CPU only; the "
            "GPU kernels (cuSOLVER) are not wired yet. Run with the CPU backend as the default "
            "(JAX_PLATFORMS=cpu)."
        )
    # The kernels find LAPACK's routines (SciPy's, through jaxlib) when first initialized;
    # a call before that crashes the process. Initializing again is a no-op.
    _lapack.initialize()
    prefix = _PREFIX.get(np.dtype(dtype))
    if prefix is None:
        raise TypeError(
            f"no LAPACK kernel for {routine} on dtype {dtype}: linear algebra "
            "takes float32, float64, complex64 or complex128"
        )
    return f"lapack_{prefix}{routine}_ffi"


def _layout(aval, num_batch):
    """Column-major for a (batch of) matrix, row-major for vectors and scalars."""
    r = aval.ndim
    if r - num_batch == 2:
        return [r - 2, r - 1, *range(r - 3, -1, -1)]
    return list(range(r - 1, -1, -1))


def uplo(lower):
    return ord("L" if lower else "U")


def char(c):
    """A LAPACK character flag ('N', 'V', 'A', ...) as the kernel's ui8 attribute."""
    return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(c) if isinstance(c, str) else c)


def i32(v):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(v))


def custom_call(name, operands, operand_avals, result_avals, attrs, num_batch, aliases=()):
    """Emit the kernel call ``name``; ``aliases`` are ``(operand, result)`` pairs that share a
    buffer (LAPACK overwrites its input). Returns the results as a list."""
    layouts = [
        ir.DenseIntElementsAttr.get(
            np.asarray(_layout(a, num_batch), np.int64), type=ir.IndexType.get()
        )
        for a in operand_avals
    ]
    result_layouts = [
        ir.DenseIntElementsAttr.get(
            np.asarray(_layout(a, num_batch), np.int64), type=ir.IndexType.get()
        )
        for a in result_avals
    ]
    single = len(result_avals) == 1
    attributes = {
        "call_target_name": ir.StringAttr.get(name),
        "has_side_effect": ir.BoolAttr.get(False),
        "backend_config": ir.StringAttr.get(""),
        "api_version": i32(1),
        "called_computations": ir.ArrayAttr.get([]),
        "operand_layouts": ir.ArrayAttr.get(layouts),
        "result_layouts": ir.ArrayAttr.get(result_layouts),
    }
    if aliases:
        attributes["output_operand_aliases"] = ir.ArrayAttr.get(
            [
                hlo.OutputOperandAlias.get([] if single else [out], operand, [])
                for operand, out in aliases
            ]
        )
    op = hlo.CustomCallOp.build_generic(
        results=[aval_to_ir(a) for a in result_avals],
        operands=list(operands),
        attributes=attributes,
    )
    op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(attrs)
    op.operation.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get(
        {"num_batch_dims": ir.StringAttr.get(str(num_batch))}
    )
    return list(op.results)


def nan_where_failed(ok, ok_aval, x, aval):
    """``x`` where its matrix's kernel call succeeded (``ok``, shaped as the batch), NaN
    elsewhere: what JAX returns for a singular or indefinite matrix."""
    nb = ok_aval.ndim
    pred_type = ir.RankedTensorType.get(aval.shape, ir.IntegerType.get_signless(1))
    pred = hlo.broadcast_in_dim(pred_type, ok, ir.DenseI64ArrayAttr.get(list(range(nb))))
    nan = complex("nan+nanj") if dtypes.is_complex(aval.dtype) else float("nan")
    return hlo.select(pred, x, full_like_aval(nan, aval))


def info_ok(info, info_aval, ok_when="eq"):
    """A boolean per matrix: LAPACK's ``info`` is 0 (``ok_when='eq'``) or >= 0 (``'ge'``)."""
    zero = full_like_aval(0, info_aval)
    direction = "EQ" if ok_when == "eq" else "GE"
    return hlo.compare(
        info,
        zero,
        hlo.ComparisonDirectionAttr.get(direction),
        compare_type=hlo.ComparisonTypeAttr.get("SIGNED"),
    )
