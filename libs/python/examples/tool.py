"""A Python tool: serves example.greet as a ToolBackendService and registers it."""
import os

from toolmesh import ToolContext, serve_tools, tool


@tool(
    name="example.greet",
    input_schema={
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}},
        "required": ["name"],
    },
    required_scopes=["read:greetings"],
)
def greet(args: dict, ctx: ToolContext) -> dict:
    """Greets a person by name."""
    ctx.trace("DATA_QUERY", {"lookup": args["name"]})
    return {"greeting": f"Hello, {args['name']}!"}


if __name__ == "__main__":
    registry = os.environ.get("TOOLMESH_REGISTRY", "127.0.0.1:7101")
    server = serve_tools([greet], registry=(registry, os.environ["TOOLMESH_TOKEN"]))
    print(f"serving example.greet on {server.address}", flush=True)
    server.wait()
