"""The contract every front end serves: the operations table and the error taxonomy
(`operations.py`, `errors.py`) over the payload models of `protocol.py`."""
