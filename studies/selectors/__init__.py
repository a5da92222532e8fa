"""Reads of the studies app, one module per page or concern."""
