"""cloudbroker provider plugin for Amazon Web Services."""
