"""One module per kb/* operation: its body, `run(runtime, params, call)`, typed with the
row's params and result models. `runtime/registry.py` binds each to its row of
`contract/operations.py`; `runtime/dispatch.py` runs any of them for every front end."""
