"""cloudbroker provider plugin for Huawei Cloud."""
