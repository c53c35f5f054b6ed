"""What every sparse format shares: the ``JAXSparse`` base class and the efficiency errors."""

import math


class SparseEfficiencyError(ValueError):
    """An operation would make a sparse array (effectively) dense."""


class SparseEfficiencyWarning(UserWarning):
    """An operation on a sparse array is inefficient."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """A cuSPARSE kernel is unavailable (kept for JAX's name; xform calls no cuSPARSE)."""


class JAXSparse:
    """Base class of xform's sparse arrays: a pytree of buffers with a static ``shape``.

    Subclasses set ``data`` (whose dtype is the array's), ``shape`` and ``nse``.
    """

    data = None
    shape = ()
    nse = 0

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def block_until_ready(self):
        """Wait for every buffer; returns ``self``."""
        for buf in self._bufs:
            buf.block_until_ready()
        return self

    @property
    def T(self):
        return self.transpose()

    def _repr_fields(self):
        return ""

    def __repr__(self):
        name = type(self).__name__
        try:
            dims = ", ".join(str(d) for d in self.shape)
            return f"{name}({self.dtype.name}[{dims}], nse={self.nse}{self._repr_fields()})"
        except AttributeError:  # a pytree of non-arrays (tree_map's placeholders)
            return f"{name}(<invalid>)"
