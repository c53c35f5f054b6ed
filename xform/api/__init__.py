"""The transformations' public API, the functions users call: ``jit`` (``jit.py``), the grad
family (``autodiff.py``, ``jacobian.py``), ``vmap`` (``batching.py``), ``pmap``, ``shard_map``,
``remat``, sharding placement (``sharding.py``) and devices (``host.py``). Each handles
pytrees, argnums and signatures, and calls into the interpreters and the runtime; the
package hands these names on as ``xform``'s top level."""
