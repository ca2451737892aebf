"""Reports: one result model (``model``) and renderers that only read it."""
