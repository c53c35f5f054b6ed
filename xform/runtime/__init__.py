"""What runs programs: the Array types (``array.py``), eager dispatch (``dispatch.py``: the
NumPy host path and XLA per primitive), the jit machinery (``jit.py``, ``jit_cache.py``),
the stages (``stages.py``), the partitioned runner (``partitioned.py``) and pmap's runner
(``pmap.py``). With ``lowering/``, the only place that imports jaxlib."""
