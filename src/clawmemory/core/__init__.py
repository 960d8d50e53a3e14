"""The local engine's collaborators (write path, vectors, entities, mirror, ...), built once
per store by ``core.composition`` and driven by the ``Memory`` façade (``clawmemory.memory``).

Nothing here imports the façade, cognition, history, tools, context, portability or the
client: those layers sit above the core."""
