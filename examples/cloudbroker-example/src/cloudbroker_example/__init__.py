"""cloudbroker provider plugin for Example Cloud, a fictional regional cloud used as a template."""
