"""A user's own ``pipelines`` package, as KFP projects often have one."""
