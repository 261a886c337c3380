"""Recorders of real traces whose tools return every shape of result (see ``record.py``)."""
