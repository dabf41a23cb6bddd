import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";

/** Entries per page of tools/list, prompts/list, resources/list and resources/templates/list. */
export const MCP_PAGE_SIZE = 100;

/**
 * One page of a list in name order, and the cursor of the next: the last name of this page, so a
 * page stays right when entries are added or removed between requests.
 */
export function pageOf<T>(
  entries: T[],
  nameOf: (entry: T) => string,
  cursor: string | undefined,
  list: string,
): { page: T[]; nextCursor?: string } {
  const sorted = [...entries].sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : 1));
  let start = 0;
  if (cursor !== undefined) {
    const after = decodeCursor(cursor, list);
    start = sorted.findIndex((entry) => nameOf(entry) > after);
    if (start < 0) start = sorted.length;
  }
  const page = sorted.slice(start, start + MCP_PAGE_SIZE);
  const last = page[page.length - 1];
  return start + MCP_PAGE_SIZE < sorted.length && last !== undefined
    ? { page, nextCursor: encodeCursor(nameOf(last)) }
    : { page };
}

function encodeCursor(name: string): string {
  return Buffer.from(name, "utf8").toString("base64url");
}

function decodeCursor(cursor: string, list: string): string {
  const name = Buffer.from(cursor, "base64url").toString("utf8");
  if (cursor.length > 200 || encodeCursor(name) !== cursor)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `invalid cursor: pass back a nextCursor from ${list}`,
    );
  return name;
}
