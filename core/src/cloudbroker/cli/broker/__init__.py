"""Placements: ``place``, ``up``, ``status``, ``down``, ``failover``, ``watch``, ``list``, ``gc``.

The commands register on the app when their module is imported; the imports below keep the
order of the help: ``place`` and ``up`` (:mod:`.place`), ``status`` (:mod:`.status`),
``down``, ``failover``, ``watch`` (:mod:`.control`), ``list`` and ``gc`` (:mod:`.inventory`),
``report`` (:mod:`.report`), ``watchers`` (:mod:`.watchers`),
``serve`` (:mod:`.serve`).
What they share (the broker, the state file, options) is in :mod:`.common`.
"""

# isort: skip_file
from cloudbroker.cli.broker.common import FINAL_SYNC_TIMEOUT, STATE
from cloudbroker.cli.broker.place import place, up
from cloudbroker.cli.broker.status import status
from cloudbroker.cli.broker.control import down, failover, watch
from cloudbroker.cli.broker.inventory import gc, list_placements
from cloudbroker.cli.broker.report import report_command
from cloudbroker.cli.broker.watchers import watchers
from cloudbroker.cli.broker.serve import serve_command

__all__ = [
    "FINAL_SYNC_TIMEOUT",
    "STATE",
    "down",
    "failover",
    "gc",
    "list_placements",
    "place",
    "report_command",
    "serve_command",
    "status",
    "up",
    "watch",
    "watchers",
]
