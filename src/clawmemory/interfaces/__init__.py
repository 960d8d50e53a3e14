"""Adapters over ``clawmemory.Memory``: the ``clawmem`` CLI (``interfaces.cli``), later the MCP
server and the REST API. Nothing is imported here, so ``import clawmemory`` stays light."""
