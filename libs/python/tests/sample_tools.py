"""Python tools the tests serve and register."""

from __future__ import annotations

import asyncio
import time

from toolmesh import ToolContext, ToolError, tool


@tool(
    name="py.echo",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1}, "times": {"type": "integer", "minimum": 1}},
        "required": ["text"],
        "additionalProperties": False,
    },
    required_scopes=["read:data"],
    idempotent=True,
)
def echo(args: dict, ctx: ToolContext) -> dict:
    """Repeats text; emits a DATA_QUERY and a custom trace event."""
    ctx.trace("DATA_QUERY", {"query": f"echo {args['text']}"})
    ctx.trace("cache_miss", {"key": args["text"]})
    return {"text": args["text"] * args.get("times", 1), "call_id": ctx.call_id, "agent": ctx.principal.agent_id}


#: How each py.slow call ended, by call id: `cancelled` when the Dispatcher gave up on it.
SLOW_ENDINGS: dict[str, str] = {}


@tool(
    name="py.slow",
    input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}, "required": ["seconds"]},
    required_scopes=["read:data"],
)
def slow(args: dict, ctx: ToolContext) -> dict:
    """Sleeps for the given seconds, stopping early when the call is cancelled."""
    end = time.monotonic() + float(args["seconds"])
    while time.monotonic() < end and not ctx.cancelled:
        time.sleep(0.02)
    SLOW_ENDINGS[ctx.call_id] = "cancelled" if ctx.cancelled else "finished"
    return {"slept": args["seconds"]}


@tool(name="py.fail", input_schema={"type": "object"}, required_scopes=["read:data"])
def fail(args: dict) -> dict:
    """Always fails with the code `out_of_stock`."""
    raise ToolError("out_of_stock", "no widgets left; try again tomorrow", {"sku": args.get("sku", "")})


@tool(name="py.secret", input_schema={"type": "object"}, required_scopes=["write:secret"])
def secret(args: dict) -> dict:
    """Needs a scope the test agent is never granted."""
    return {"secret": "never returned"}


@tool(
    name="py.upper",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    required_scopes=["read:data"],
    price=("CREDITS", 1000, 0),
)
async def upper(args: dict, ctx: ToolContext) -> dict:
    """Upper-cases text; an async tool with a price, which reports 2.5 credits a letter more."""
    await asyncio.sleep(0)
    ctx.trace("DATA_RESULT", {"rows": 1})
    ctx.report_cost(2500 * len(args.get("text", "")))
    ctx.report_cost(float("nan"))
    return {"text": args.get("text", "").upper()}


ALL = [echo, slow, fail, secret, upper]
