"""A local Huawei Cloud ECS (and BSS price inquiry) for tests and demos.

``python -m cloudbroker_huawei.testing.emulator`` runs it on its own.
"""
