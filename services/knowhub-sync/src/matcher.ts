import type { ToolSpec } from "@toolmesh/proto";
import type { HubEntry } from "./hub-client.js";

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);

/** The slug a tool named `data.query` would have: `data-query`. */
export const slugOf = (name: string) => words(name).join("-");

/**
 * The hub entries that describe a tool, as sorted slugs. An entry matches when its slug is the
 * tool's name as a slug, its name equals the tool's name (ignoring case and punctuation), or one
 * of its keywords is a word (or, for several words, a phrase) of the tool's name, category,
 * description or label values.
 */
export function matchSlugs(spec: ToolSpec, entries: HubEntry[]): string[] {
  const toolSlug = slugOf(spec.name);
  const text = ` ${[spec.name, spec.category, spec.description, ...Object.values(spec.labels)]
    .flatMap(words)
    .join(" ")} `;
  const slugs = new Set<string>();
  for (const entry of entries) {
    if (entry.slug === "") continue;
    const byKeyword = entry.keywords.some((k) => {
      const phrase = words(k).join(" ");
      return phrase !== "" && text.includes(` ${phrase} `);
    });
    if (entry.slug === toolSlug || slugOf(entry.name) === toolSlug || byKeyword) {
      slugs.add(entry.slug);
    }
  }
  return [...slugs].sort();
}
