import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { type Tool, ToolStatus } from "@toolmesh/proto";
import { isTool } from "./mcp-entries.js";

/** A tool the search found, and how well it matched. */
export interface ToolHit {
  tool: Tool;
  score: number;
}

/** The tools a search reads: the registry snapshot. */
export interface SearchableTools {
  all(): Iterable<Tool>;
}

/** How much a word counts in each part of a tool: its name says most about what it does. */
const FIELD_WEIGHTS = { name: 3, category: 2, title: 2, description: 1, schema: 1 } as const;
/** BM25's term-frequency saturation and length normalisation, at their usual values. */
const K1 = 1.2;
const B = 0.75;
/** How deep an input schema is read for property names and descriptions. */
const SCHEMA_DEPTH = 4;
/** Words too common in tool descriptions to tell tools apart. */
const STOP_WORDS = new Set(
  "a an and are as at be by for from has in is it its of on or that the this to was with".split(
    " ",
  ),
);

interface Indexed {
  /** The snapshot's tool objects, in the order they were indexed: a change replaces one. */
  tools: Tool[];
  /** term → [tool index, weighted term frequency] */
  postings: Map<string, [number, number][]>;
  lengths: Float64Array;
  averageLength: number;
  /** Registry name → tool index, for a query that names a tool exactly. */
  byName: Map<string, number>;
}

/**
 * Ranked keyword search over the registry's tools (BM25 over their names, titles, categories,
 * descriptions and input schemas), in memory. The index is rebuilt only when the snapshot's tools
 * changed since the last search, so a search costs its query's postings, not the registry's size.
 */
export class ToolSearch {
  private index: Indexed | undefined;

  constructor(private readonly source: SearchableTools) {}

  /**
   * The best matches first, at most `limit`, among the tools `usable` accepts (the caller's
   * grants). A query that is exactly a tool's name puts that tool first.
   */
  search(query: string, limit: number, usable: (tool: Tool) => boolean): ToolHit[] {
    const index = this.current();
    const scores = new Map<number, number>();
    const terms = [...new Set(searchTerms(query))];
    const n = index.tools.length;
    for (const term of terms) {
      const postings = index.postings.get(term);
      if (!postings) continue;
      const idf = Math.log(1 + (n - postings.length + 0.5) / (postings.length + 0.5));
      for (const [doc, tf] of postings) {
        const norm = 1 - B + (B * (index.lengths[doc] ?? 0)) / (index.averageLength || 1);
        scores.set(doc, (scores.get(doc) ?? 0) + (idf * (tf * (K1 + 1))) / (tf + K1 * norm));
      }
    }
    const exact = index.byName.get(query.trim().toLowerCase());
    if (exact !== undefined) scores.set(exact, Number.MAX_SAFE_INTEGER);
    const ranked = [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    const hits: ToolHit[] = [];
    // The grants are asked in rank order, only until the page is full.
    for (const [doc, score] of ranked) {
      const tool = index.tools[doc];
      if (!tool || !usable(tool)) continue;
      hits.push({ tool, score: score === Number.MAX_SAFE_INTEGER ? ranked.length + 1 : score });
      if (hits.length >= limit) break;
    }
    return hits;
  }

  /** The index of the snapshot's tools now, rebuilt when any of them changed. */
  private current(): Indexed {
    const tools: Tool[] = [];
    for (const tool of this.source.all())
      if (tool.spec && tool.spec.status !== ToolStatus.DISABLED && isTool(tool)) tools.push(tool);
    const index = this.index;
    if (
      index &&
      index.tools.length === tools.length &&
      index.tools.every((tool, i) => tool === tools[i])
    )
      return index;
    this.index = build(tools);
    return this.index;
  }
}

function build(tools: Tool[]): Indexed {
  const postings = new Map<string, [number, number][]>();
  const lengths = new Float64Array(tools.length);
  const byName = new Map<string, number>();
  let total = 0;
  tools.forEach((tool, doc) => {
    const spec = tool.spec;
    if (!spec) return;
    byName.set(spec.name, doc);
    const frequencies = new Map<string, number>();
    const add = (text: string, weight: number) => {
      for (const term of searchTerms(text)) {
        frequencies.set(term, (frequencies.get(term) ?? 0) + weight);
        lengths[doc] = (lengths[doc] ?? 0) + weight;
      }
    };
    add(spec.name, FIELD_WEIGHTS.name);
    add(spec.annotations?.title ?? "", FIELD_WEIGHTS.title);
    add(spec.category, FIELD_WEIGHTS.category);
    add(spec.description, FIELD_WEIGHTS.description);
    add(schemaWords(spec.inputSchema, SCHEMA_DEPTH), FIELD_WEIGHTS.schema);
    total += lengths[doc] ?? 0;
    for (const [term, tf] of frequencies) {
      const list = postings.get(term);
      if (list) list.push([doc, tf]);
      else postings.set(term, [[doc, tf]]);
    }
  });
  return {
    tools,
    postings,
    lengths,
    averageLength: tools.length > 0 ? total / tools.length : 0,
    byName,
  };
}

/** The property names, titles and descriptions of a JSON Schema, as text. */
function schemaWords(schema: JsonObject | undefined, depth: number): string {
  if (!schema || depth === 0) return "";
  const words: string[] = [];
  for (const key of ["title", "description"]) {
    const value = schema[key];
    if (typeof value === "string") words.push(value);
  }
  const properties = schema.properties;
  if (isObject(properties)) {
    for (const [name, property] of Object.entries(properties)) {
      words.push(name);
      if (isObject(property)) words.push(schemaWords(property, depth - 1));
    }
  }
  if (isObject(schema.items)) words.push(schemaWords(schema.items, depth - 1));
  return words.join(" ");
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * The search terms of a text: words split at punctuation, dots and camelCase, lower-cased, stop
 * words dropped, a plural or verb ending taken off so `queries` finds `query`.
 */
export function searchTerms(text: string): string[] {
  const out: string[] = [];
  const words = text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  for (const word of words) {
    if (word.length < 2 || STOP_WORDS.has(word)) continue;
    out.push(stem(word));
  }
  return out;
}

function stem(word: string): string {
  if (word.length > 4 && word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith("ing")) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith("ed")) return word.slice(0, -2);
  if (word.length > 4 && word.endsWith("es") && /(ch|sh|x|ss)es$/.test(word))
    return word.slice(0, -2);
  if (word.length > 3 && word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}
