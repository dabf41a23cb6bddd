"""toolmesh for Python: generated messages and stubs under toolmesh.<area>.v1."""
