"""cloudbroker provider plugin for Alibaba Cloud."""
