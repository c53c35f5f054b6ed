"""xform's interpreters, one per module, each with its rule table: ``staging`` (tracing to a
jaxpr), ``ad`` (JVP), ``transpose``, ``partial_eval``, ``batching``, ``dce``, ``typed``
(shardings and varying axes in types), and eager grad's tape (``tape``, ``vjp_tape``).
JAX's public ``jax.interpreters`` names are ``xform.extend``'s (compat mode maps them)."""
