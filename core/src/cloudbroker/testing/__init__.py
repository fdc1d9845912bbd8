"""The provider author kit: a contract test suite and emulator machinery for local clouds."""
