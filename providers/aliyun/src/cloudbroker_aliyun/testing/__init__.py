"""A local Alibaba Cloud ECS for tests and demos.

``python -m cloudbroker_aliyun.testing.emulator`` runs it on its own.
"""
