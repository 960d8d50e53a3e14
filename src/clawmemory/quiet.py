"""No telemetry from the libraries clawmemory loads: called right before each import of one
that has its own (docs/dependencies.md#network-and-telemetry), never at package import.

- **ONNX Runtime** starts a native (1DS) telemetry client when its library loads, which
  resolves ``mobile.events.data.microsoft.com`` and posts usage events from any process that
  stays up (measured: the first lookup 9 s after the import, then one every 5-8 s).
  ``onnxruntime.disable_telemetry_events()`` does not stop it; ``ORT_DISABLE_TELEMETRY=1`` in
  the environment when the library loads does, and nothing set later does.
- **huggingface_hub** (imported by sentence-transformers, transformers and the model download)
  reads ``HF_HUB_DISABLE_TELEMETRY`` when imported: its ``send_telemetry`` calls, and the usage
  details in the User-Agent of a download the user allowed, are then off.

Both are set to ``1`` whatever they held: no clawmemory setting turns telemetry on. They are
environment variables because that is the only switch each library reads early enough, so they
stay set for the rest of the process and for the processes it starts. Nothing else about the
host's environment is changed (``HF_HUB_OFFLINE`` stays the host's: clawmemory's own loads use
``local_files_only`` instead).
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["SWITCHES", "quiet_dependencies"]

log = logging.getLogger("clawmemory")

# Environment variable -> the module that reads it when first imported.
SWITCHES = {
    "ORT_DISABLE_TELEMETRY": "onnxruntime",
    "HF_HUB_DISABLE_TELEMETRY": "huggingface_hub",
}
_warned: set[str] = set()


def quiet_dependencies() -> None:
    """Turn the dependencies' telemetry off; call it before importing onnxruntime, tokenizers,
    huggingface_hub, transformers, sentence-transformers or torch. Cheap and idempotent.

    A library the host imported earlier has already read its switch: huggingface_hub's is
    corrected in place (it is read again on every call); ONNX Runtime's cannot be, so a warning
    says how to start the process instead."""
    for name, module in SWITCHES.items():
        if os.environ.get(name) == "1":
            continue  # written once only: setenv races with native threads reading the env
        already = module in sys.modules
        os.environ[name] = "1"
        if not already:
            continue
        if module == "huggingface_hub":
            constants = sys.modules.get("huggingface_hub.constants")
            if constants is not None:
                setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)  # noqa: B010 (a module)
        elif module not in _warned:
            _warned.add(module)
            log.warning("%s was imported before clawmemory could switch its telemetry off;"
                        " start the process with %s=1 in its environment", module, name)
