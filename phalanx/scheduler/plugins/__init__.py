"""Filter and Score plugins, one module each, wired by name in `registry`."""
