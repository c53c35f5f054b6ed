"""``dot_product_attention``: softmax(Q K^T * scale + bias, masked) V in the B T N H layout.

A composition of ``xform.numpy``: two einsums around a float32 softmax, with grouped-query
heads handled by viewing the N query heads as K groups of G = N // K.
"""

import numpy as np

from xform import lax
from xform import numpy as xnp
from xform.numpy._promote import aval_of

__all__ = ["dot_product_attention"]


def _ensure_4d(t):
    t = xnp.asarray(t)
    missing = 4 - aval_of(t).ndim
    if missing > 0:
        return xnp.expand_dims(t, tuple(range(missing)))
    return t


def _check(t, shape, dtype, name):
    """A ``ValueError`` naming ``name`` unless ``t`` has ``shape`` (-1: any) and ``dtype``."""
    if t is None:
        return
    aval = aval_of(t)
    if aval.ndim != len(shape):
        raise ValueError(
            f"dot_product_attention: {name} ndim should be {len(shape)}, but got "
            f"{aval.ndim} (shape {aval.shape})"
        )
    if dtype is not None and aval.dtype != dtype:
        raise ValueError(
            f"dot_product_attention: {name} dtype should be {dtype}, but got {aval.dtype}"
        )
    if any(want not in (-1, got) for want, got in zip(shape, aval.shape, strict=True)):
        expected = "(" + ", ".join("*" if d == -1 else str(d) for d in shape) + ")"
        raise ValueError(
            f"dot_product_attention: {name} shape should be {expected}, but got {aval.shape}"
        )


def _large_negative(dtype):
    # Capped at float32's range: the softmax runs in float32, so the value must stay finite.
    top = min(float(np.finfo(dtype).max), float(np.finfo(np.float32).max))
    return xnp.asarray(-0.7 * top, dtype=dtype)


def _grouped(t, num_kv_heads, group):
    """A (B, N|1, T, S) bias or mask as (B, K|1, G|1, T, S), matching the grouped logits."""
    if t is None:
        return None
    b, n, t_len, s_len = aval_of(t).shape
    if n == 1:
        return t[:, :, None]
    return xnp.reshape(t, (b, num_kv_heads, group, t_len, s_len))


def _combined_mask(mask, is_causal, q_seqlen, kv_seqlen, window, t_len, s_len):
    """The (broadcastable, 5-D) boolean mask of the logits to keep, or ``None``."""
    keep = mask
    q_pos = lax.broadcasted_iota(np.int32, (t_len, s_len), 0)
    k_pos = lax.broadcasted_iota(np.int32, (t_len, s_len), 1)
    extra = []
    if is_causal:
        extra.append(q_pos >= k_pos)
    if window is not None:
        left, right = window
        extra.append((q_pos <= k_pos + left) & (q_pos >= k_pos - right))
    for m in extra:
        keep = m[None, None, None] if keep is None else xnp.logical_and(keep, m)
    if q_seqlen is not None or kv_seqlen is not None:
        pad = True
        if q_seqlen is not None:
            pad = xnp.arange(t_len)[None, :, None] < q_seqlen[:, None, None]
        if kv_seqlen is not None:
            pad = xnp.logical_and(pad, xnp.arange(s_len)[None, None, :] < kv_seqlen[:, None, None])
        pad = pad[:, None, None]
        keep = pad if keep is None else xnp.logical_and(keep, pad)
    return keep


def _attention_xla(
    query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen, window, return_residual
):
    b, t_len, n, h = aval_of(query).shape
    _, s_len, k, _ = aval_of(key).shape
    group = n // k
    query = xnp.reshape(query, (b, t_len, k, group, h))
    bias, mask = _grouped(bias, k, group), _grouped(mask, k, group)

    logits_dtype = xnp.promote_types(aval_of(query).dtype, np.float32)
    logits = xnp.einsum("BTKGH,BSKH->BKGTS", query, key, preferred_element_type=logits_dtype)
    logits = logits * xnp.asarray(scale, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits_dtype)
    keep = _combined_mask(mask, is_causal, q_seqlen, kv_seqlen, window, t_len, s_len)
    if keep is not None:
        logits = xnp.where(keep, logits, _large_negative(logits_dtype))

    logits = logits.astype(np.float32)  # the softmax always runs in float32, as JAX's
    key_dtype = aval_of(key).dtype
    probs = _softmax_last(logits).astype(key_dtype)
    encoded = xnp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    if q_seqlen is not None:
        q_mask = xnp.arange(t_len)[None, :] < q_seqlen[:, None]
        encoded = encoded * q_mask[:, :, None, None, None].astype(aval_of(encoded).dtype)
    encoded = xnp.reshape(encoded, (b, t_len, n, h))
    if not return_residual:
        return encoded
    lse = _logsumexp_last(logits).astype(key_dtype)  # B K G T
    lse = xnp.reshape(xnp.transpose(lse, (0, 3, 1, 2)), (b, t_len, n))
    return encoded, lax.stop_gradient(lse)


def _softmax_last(x):
    x_max = lax.stop_gradient(xnp.max(x, -1, keepdims=True))
    unnormalized = xnp.exp(x - x_max)
    return unnormalized / xnp.sum(unnormalized, -1, keepdims=True)


def _logsumexp_last(x):
    x_max = lax.stop_gradient(xnp.max(x, -1, keepdims=True))
    return xnp.log(xnp.sum(xnp.exp(x - x_max), -1)) + x_max[..., 0]


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal=False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual=False,
):
    """Scaled dot-product attention ``softmax(Q K^T * scale + bias) V`` per head.

    Shapes use B (batch), T (query length), S (key/value length), N (query heads), K
    (key/value heads; N must be a multiple of K, grouped-query attention) and H (head size).

    Args:
      query: ``(B, T, N, H)`` or ``(T, N, H)``.
      key, value: ``(B, S, K, H)`` or ``(S, K, H)``, the dtype of ``query``.
      bias: added to the logits; broadcastable to ``(B, N, T, S)``.
      mask: boolean, ``False`` where a logit is masked out; broadcastable to ``(B, N, T, S)``.
      scale: the logit scale (default ``1 / sqrt(H)``).
      is_causal: mask keys after each query.
      query_seq_lengths, key_value_seq_lengths: int32 ``(B,)`` valid lengths; padded queries
        give zeros.
      local_window_size: ``(left, right)`` or an int for both: keys farther from a query are
        masked out.
      implementation: ``None`` or ``"xla"``; ``"cudnn"`` needs a GPU with cuDNN.
      return_residual: also return the logsumexp of the logits, shape ``(B, T, N)``.

    Returns:
      An array shaped as ``query`` (and the residual when ``return_residual``).

    Example:
      >>> q = xform.numpy.ones((2, 8, 4, 16))
      >>> dot_product_attention(q, q, q, is_causal=True).shape  # (2, 8, 4, 16)
    """
    output_shape = aval_of(xnp.asarray(query)).shape
    query, key, value = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
    bias = None if bias is None else _ensure_4d(bias)
    mask = None if mask is None else _ensure_4d(mask)
    if query_seq_lengths is not None:
        query_seq_lengths = xnp.asarray(query_seq_lengths)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = xnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)

    b, s_len, k, h = aval_of(key).shape
    key_dtype = aval_of(key).dtype
    _check(value, (b, s_len, k, h), key_dtype, "value")
    _check(query, (b, -1, -1, h), key_dtype, "query")
    _check(mask, (-1,) * 4, np.dtype(bool), "mask")
    _check(bias, (-1,) * 4, None, "bias")
    _check(query_seq_lengths, (b,), np.dtype(np.int32), "query_seq_lengths")
    _check(key_value_seq_lengths, (b,), np.dtype(np.int32), "key_value_seq_lengths")
    n = aval_of(query).shape[2]
    if n % k != 0:
        raise ValueError(
            f"dot_product_attention: the number of query heads must be a multiple "
            f"of key/value heads, but got {n} vs {k} (query shape "
            f"{aval_of(query).shape}, key shape {aval_of(key).shape})"
        )
    for name, t, at in (("mask", mask, 1), ("bias", bias, 1)):
        if t is not None and aval_of(t).shape[at] not in (1, n):  # AssertionError, as JAX's
            raise AssertionError(
                f"dot_product_attention: {name} heads must be 1 or {n}, got shape "
                f"{aval_of(t).shape}"
            )
    if implementation == "cudnn":
        raise RuntimeError("dot_product_attention: implementation='cudnn': cuDNN is not detected.")
    if implementation not in (None, "xla"):
        raise ValueError(
            f"dot_product_attention: unsupported implementation option: "
            f"{implementation!r}; expected None, 'xla' or 'cudnn'"
        )
    scale = 1.0 / np.sqrt(h) if scale is None else scale

    out = _attention_xla(
        query,
        key,
        value,
        bias,
        mask,
        is_causal,
        scale,
        query_seq_lengths,
        key_value_seq_lengths,
        local_window_size,
        return_residual,
    )
    if return_residual:
        out, residual = out
        return xnp.reshape(out, output_shape), xnp.reshape(residual, output_shape[:-1])
    return xnp.reshape(out, output_shape)
