"""A local Tencent Cloud CVM for tests and demos.

``python -m cloudbroker_tencent.testing.emulator`` runs it on its own.
"""
