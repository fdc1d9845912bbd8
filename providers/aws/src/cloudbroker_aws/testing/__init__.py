"""A local AWS for tests and demos: the emulator (``python -m cloudbroker_aws.testing.emulator``),
its Price List and spot price history, and the SigV4 check it applies to every request."""
