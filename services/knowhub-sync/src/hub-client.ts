/** One row of the knowledge hub's tool table. */
export interface HubEntry {
  slug: string;
  name: string;
  keywords: string[];
  /** Tools currently linked to this entry. */
  links: HubLink[];
}

/** What the hub stores for a tool linked to one of its entries. */
export interface HubLink {
  tool: string;
  groups: string[];
  status: "connected";
  revision: number;
}

/** Raised for any failed hub request; the sync retries it with backoff. */
export class HubError extends Error {
  override name = "HubError";
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The knowledge hub's HTTP API as described in CONTRACT.md. */
export class HubClient {
  private readonly base: string;

  constructor(
    baseUrl: string,
    private readonly token: string | undefined,
    private readonly timeoutMs = 10_000,
  ) {
    this.base = baseUrl.replace(/\/+$/, "");
  }

  private async request(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new HubError(`${method} ${path}: knowledge hub unreachable`, undefined, {
        cause: error,
      });
    }
    if (!res.ok && !(method === "DELETE" && res.status === 404)) {
      throw new HubError(`${method} ${path}: knowledge hub answered ${res.status}`, res.status);
    }
    return res;
  }

  /** GET /api/tools: the tool table. */
  async listTools(): Promise<HubEntry[]> {
    const res = await this.request("GET", "/api/tools");
    const body = (await res.json()) as { tools?: unknown };
    if (!Array.isArray(body.tools)) {
      throw new HubError('GET /api/tools: expected {"tools": [...]}', res.status);
    }
    return body.tools.map((raw) => {
      const e = raw as Partial<HubEntry>;
      return {
        slug: String(e.slug ?? ""),
        name: String(e.name ?? ""),
        keywords: Array.isArray(e.keywords) ? e.keywords.map(String) : [],
        links: Array.isArray(e.links) ? (e.links as HubLink[]) : [],
      };
    });
  }

  /** PUT /api/tools/{slug}/links/{tool}: create or replace one link (idempotent). */
  async putLink(slug: string, link: HubLink): Promise<void> {
    await this.request(
      "PUT",
      `/api/tools/${encodeURIComponent(slug)}/links/${encodeURIComponent(link.tool)}`,
      link,
    );
  }

  /** DELETE /api/tools/{slug}/links/{tool}: remove one link; a missing link is fine. */
  async deleteLink(slug: string, tool: string): Promise<void> {
    await this.request(
      "DELETE",
      `/api/tools/${encodeURIComponent(slug)}/links/${encodeURIComponent(tool)}`,
    );
  }
}
