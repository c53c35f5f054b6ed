"""``xform.image``: image resampling, as ``jax.image``."""

from xform.image._scale import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
