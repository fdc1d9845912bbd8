"""Placements: ``place``, ``up``, ``status``, ``down``, ``failover``, ``watch``, ``list``, ``gc``,
``report``, ``watchers`` and ``serve``, a module or two each (see
:data:`cloudbroker.cli.commands.MODULES`).

Nothing is imported here: ``status`` loads :mod:`.status` and what it needs, not the other
commands. What they share (the broker, the state file, options) is in :mod:`.common`.
"""
