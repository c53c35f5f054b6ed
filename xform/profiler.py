"""Profiling, as ``jax.profiler``: traces of what the XLA runtime under xform runs (for
TensorBoard/Perfetto), annotations and device memory profiles.

The profiler is the runtime's (jaxlib's), so these are JAX's own functions and classes: an
xform program shows up in a trace as the XLA executions it launches.
"""

from jax.profiler import (  # noqa: F401
    ProfileData,
    ProfileEvent,
    ProfileOptions,
    ProfilePlane,
    StepTraceAnnotation,
    TraceAnnotation,
    annotate_function,
    device_memory_profile,
    register_subprocess,
    save_device_memory_profile,
    start_server,
    start_trace,
    stop_server,
    stop_trace,
    trace,
)
