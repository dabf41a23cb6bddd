"""A ten-line agent: calls example.greet through the whole toolmesh chain."""
import os

from toolmesh import InvalidArguments, Toolmesh

client = Toolmesh(os.environ.get("TOOLMESH_ADDRESS", "127.0.0.1:7100"), os.environ["TOOLMESH_TOKEN"])
try:
    result = client.dispatch("example.greet", {"name": "Ada"}, timeout=5)
    print(result.status, result.output)
except InvalidArguments as error:
    print("fix these arguments:", error.violations)
