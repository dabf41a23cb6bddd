import type { Secret } from "@toolmesh/proto";

/** A followed snapshot of secrets (the permission bucket's `secrets.>`): what SecretsByName reads. */
export interface SecretView {
  readonly version: number;
  values(): IterableIterator<Secret>;
}

/**
 * The secrets of a snapshot grouped by name, rebuilt when the snapshot changes, so picking one
 * for a call reads the few of its name rather than the whole vault.
 */
export class SecretsByName {
  private byName = new Map<string, Secret[]>();
  private builtAt = -1;

  constructor(private readonly view: SecretView) {}

  /** The secrets of a name (empty when none). */
  candidates(name: string): readonly Secret[] {
    if (this.builtAt !== this.view.version) {
      const next = new Map<string, Secret[]>();
      for (const secret of this.view.values()) {
        const list = next.get(secret.name);
        if (list) list.push(secret);
        else next.set(secret.name, [secret]);
      }
      this.byName = next;
      this.builtAt = this.view.version;
    }
    return this.byName.get(name) ?? [];
  }
}
