"""Machinery for local cloud emulators: an HTTP server on 127.0.0.1, state, fault injection.

A provider's emulator subclasses :class:`Emulator` and implements four methods:

* :meth:`Emulator.authenticate` -- verify the request signature the real SDK computed;
  raise :class:`ApiError` exactly as the cloud answers a bad signature.
* :meth:`Emulator.action` -- which API action a request is (``RunInstances``, ...).
* :meth:`Emulator.handle` -- perform the action against :attr:`Emulator.state` and return a
  :class:`Response` in the cloud's wire format.
* :meth:`Emulator.error` -- render an :class:`ApiError` the way the cloud does (status code,
  body shape, headers), so the real SDK raises its real exception.

The base class provides the control API under ``/_emulator/`` that tests (and people trying
cloudbroker without an account) use:

* ``GET /_emulator/state`` -- instances, pending faults, a log of handled actions and how many
  requests are being answered (``in_flight``).
* ``POST /_emulator/faults`` with JSON ``{"kind": ..., "action": "RunInstances", "count": 1,
  "seconds": 0.5}`` -- kinds: ``latency``, ``throttle``, ``server-error``, ``capacity``,
  ``lose-response`` (perform the action, then drop the connection without answering),
  ``error`` with ``"code"`` and ``"status"`` (and ``"message"``): any error of the cloud's
  documented tables; ``fail-later`` (launch actions only, :attr:`Emulator.launch_actions`):
  the launch succeeds and the instance fails ``seconds`` later, ``message`` its reason.
* ``POST /_emulator/lag`` with ``{"seconds": 3}`` -- the listing lag: a new instance is not
  listed (describe answers not found) for that long, a released one stays listed as long
  (:meth:`Instance.visible`), as eventually consistent APIs do.
* ``POST /_emulator/paging`` with ``{"page_size": 2}`` -- list actions answer at most that
  many items a page (``null``: the cloud's maximum); :meth:`Emulator.page` applies it.
* ``POST /_emulator/quota`` with ``{"region": ..., "name": ..., "value": 8}`` -- the
  account's quota the emulated quota API answers (``null``: the emulator's default).
* ``POST /_emulator/reclaim`` with ``{"instance_id": ...}`` -- a spot reclaim.
* ``POST /_emulator/capacity`` with ``{"place": REGION-or-ZONE, "instance_type": ...,
  "count": N}`` -- only N more launches of the type there (``null``: unlimited again). The
  emulators' stock APIs (availability) answer from the same numbers: 0 is sold out, 1 to
  :data:`LOW_STOCK` is low, unset or more is in stock (:meth:`Emulator.stock_left`).
* ``POST /_emulator/bill`` with ``{"instance_id": ..., "cycle": "2026-12", "amount": "12.5",
  "currency": "CNY"}`` -- what the emulated billing API answers for the instance in that
  billing cycle (``amount`` null: not billed yet, as a bill that lags the spend).
* ``POST /_emulator/outage`` with ``{"on": true}`` -- the API stops answering (connections are
  dropped; the control API keeps working) until ``{"on": false}``.
* ``POST /_emulator/reset`` -- forget all instances, faults and stock limits.

Faults apply after authentication, to the next ``count`` requests of ``action`` (any action
when omitted). A launch handler calls :meth:`Emulator.launched` on each instance it creates
(arming a ``fail-later`` fault) and shows only instances :meth:`Emulator.visible` accepts.
Instances start ``pending`` and are ``running`` after
:attr:`Emulator.boot_seconds`. An emulator's launch action calls :meth:`Emulator.take_stock`
before creating an instance, so a stock limit answers with the cloud's capacity error.

An :class:`InstanceRunner` set as :attr:`Emulator.runner` is told when an instance appears
and when it ends (terminated or reclaimed): the sandbox runs each instance's user data as a
local process this way.

Modules: ``wire`` (:class:`Request`, :class:`Response`, :class:`ApiError`), ``state``
(:class:`Instance`, :class:`State`, faults and stock), ``server`` (:class:`Emulator`,
:func:`serve`), ``json_api`` (:class:`JsonEmulator`).
"""

from __future__ import annotations

from cloudbroker.testing.emulator.json_api import JsonEmulator
from cloudbroker.testing.emulator.server import Emulator, InstanceRunner, serve
from cloudbroker.testing.emulator.state import (
    FAULT_KINDS,
    LAUNCH_FAULTS,
    LOW_STOCK,
    Fault,
    Instance,
    State,
)
from cloudbroker.testing.emulator.wire import ApiError, Request, Response

__all__ = [
    "FAULT_KINDS",
    "LAUNCH_FAULTS",
    "LOW_STOCK",
    "ApiError",
    "Emulator",
    "Fault",
    "Instance",
    "InstanceRunner",
    "JsonEmulator",
    "Request",
    "Response",
    "State",
    "serve",
]
