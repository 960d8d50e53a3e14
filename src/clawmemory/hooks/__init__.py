"""Automatic memory for coding agents through their hook systems (``clawmem hooks``,
docs/hooks.md): ``hooks.claude_code`` for Claude Code and agents with the same hook model.

It sits beside ``context`` (it builds the ``[Memory context]`` block an agent sees) and below
the interfaces, so the CLI's ``hooks`` commands are a thin layer over it. Nothing is imported
here: ``clawmem hooks run`` is on the path of every prompt.
"""
