"""cloudbroker provider plugin for Tencent Cloud."""
