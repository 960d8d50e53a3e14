"""Adapters over ``clawmemory.Memory``: the ``clawmem`` CLI (``interfaces.cli``), the MCP server
(``interfaces.mcp``) and the HTTP service with the REST API and the web inspector
(``interfaces.rest``). Nothing is imported here, so ``import clawmemory`` stays light."""
