"""Event listeners, as ``jax.monitoring``: a process-wide event bus that tools subscribe to.

The bus is JAX's (plain Python); xform records no events of its own on it yet, so a listener
sees only what user code and libraries record.
"""

from jax.monitoring import (  # noqa: F401
    clear_event_listeners,
    record_event,
    record_event_duration_secs,
    record_event_time_span,
    record_scalar,
    register_event_duration_secs_listener,
    register_event_listener,
    register_event_time_span_listener,
    register_scalar_listener,
    unregister_event_duration_listener,
    unregister_event_listener,
    unregister_event_time_span_listener,
    unregister_scalar_listener,
)
