import http from "node:http";
import type { AddressInfo } from "node:net";

/** A tool-table row as the reference hub keeps it. */
export interface ReferenceEntry {
  slug: string;
  name: string;
  keywords: string[];
}

interface Link {
  tool: string;
  groups: string[];
  status: string;
  revision: number;
}

/**
 * A small knowledge hub implementing services/knowhub-sync/CONTRACT.md in memory, for tests:
 * it can be stopped and started on the same port to play a hub that is down.
 */
export class ReferenceHub {
  private server: http.Server | undefined;
  private readonly links = new Map<string, Map<string, Link>>();
  private readonly listeners = new Set<() => void>();
  port = 0;
  /** Every request seen, as `METHOD path status`. */
  readonly requests: string[] = [];

  constructor(
    private readonly entries: ReferenceEntry[],
    private readonly token: string,
  ) {
    for (const e of entries) this.links.set(e.slug, new Map());
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  link(slug: string, tool: string): Link | undefined {
    return this.links.get(slug)?.get(tool);
  }

  /** Resolves once the check passes, re-checked after every request. */
  waitFor(check: () => boolean, timeoutMs = 20_000): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const listener = () => {
        if (!check()) return;
        this.listeners.delete(listener);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(
          new Error(`hub state not reached; requests:\n${this.requests.slice(-20).join("\n")}`),
        );
      }, timeoutMs);
      this.listeners.add(listener);
    });
  }

  async start(): Promise<void> {
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        const status = this.handle(req, body, res);
        this.requests.push(`${req.method} ${req.url} ${status}`);
        for (const listener of [...this.listeners]) listener();
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, body: string, res: http.ServerResponse): number {
    const send = (status: number, payload?: unknown) => {
      res.writeHead(status, payload ? { "content-type": "application/json" } : {});
      res.end(payload ? JSON.stringify(payload) : undefined);
      return status;
    };
    if (req.headers.authorization !== `Bearer ${this.token}`)
      return send(401, { error: "bad token" });
    const url = new URL(req.url ?? "/", "http://hub");
    if (req.method === "GET" && url.pathname === "/api/tools") {
      return send(200, {
        tools: this.entries.map((e) => ({
          ...e,
          links: [...(this.links.get(e.slug)?.values() ?? [])],
        })),
      });
    }
    const match = /^\/api\/tools\/([^/]+)\/links\/([^/]+)$/.exec(url.pathname);
    if (!match) return send(404, { error: "no such route" });
    const slug = decodeURIComponent(match[1] as string);
    const tool = decodeURIComponent(match[2] as string);
    const links = this.links.get(slug);
    if (!links) return send(404, { error: `no tool-table entry ${slug}` });
    if (req.method === "DELETE") return send(links.delete(tool) ? 204 : 404);
    if (req.method !== "PUT") return send(405);
    let link: Link;
    try {
      link = JSON.parse(body) as Link;
    } catch {
      return send(400, { error: "body is not JSON" });
    }
    if (link.tool !== tool || link.status !== "connected" || !Array.isArray(link.groups)) {
      return send(422, { error: "expected {tool, groups, status: connected, revision}" });
    }
    links.set(tool, link);
    return send(204);
  }
}
