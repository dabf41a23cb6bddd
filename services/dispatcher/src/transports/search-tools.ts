import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import {
  FoundToolSchema,
  type Principal,
  type SearchToolsRequest,
  type SearchToolsResponse,
  SearchToolsResponseSchema,
} from "@toolmesh/proto";
import type { ToolSearch } from "../catalog/tool-search.js";
import { mayUse } from "../catalog/visible-tools.js";
import type { CheckDeps } from "../chain/types.js";

/** The longest query a search takes. */
export const MAX_QUERY_LENGTH = 500;
/** Tools a search answers when the caller names no limit, and the most it may name. */
export const DEFAULT_SEARCH_LIMIT = 10;
export const MAX_SEARCH_LIMIT = 50;

export interface SearchDeps extends CheckDeps {
  search: ToolSearch;
}

/**
 * SearchTools, and what /mcp's `search_tools` answers: the tools the caller may call, best match
 * first. Unlisted tools are found here like any other; that is what they are for.
 */
export function searchTools(
  deps: SearchDeps,
  req: Pick<SearchToolsRequest, "query" | "limit">,
  principal: Principal,
): SearchToolsResponse {
  const query = req.query.trim();
  if (query === "")
    throw invalidField("query", "say what the tool should do, such as `send an email`");
  if (query.length > MAX_QUERY_LENGTH)
    throw invalidField(
      "query",
      `is ${query.length} characters; at most ${MAX_QUERY_LENGTH} allowed: use a few keywords`,
    );
  if (req.limit > MAX_SEARCH_LIMIT)
    throw invalidField("limit", `is ${req.limit}; at most ${MAX_SEARCH_LIMIT} allowed`);
  if (!deps.catalog.isReady || !deps.policy.isReady)
    throw new ConnectError(
      `the dispatcher has not loaded the ${deps.catalog.isReady ? "permission grants" : "tool registry"} yet; retry in a moment`,
      Code.Unavailable,
    );
  const hits = deps.search.search(query, req.limit || DEFAULT_SEARCH_LIMIT, (tool) =>
    mayUse(deps, principal, tool),
  );
  return create(SearchToolsResponseSchema, {
    tools: hits.map((hit) => create(FoundToolSchema, { tool: hit.tool, score: hit.score })),
  });
}
