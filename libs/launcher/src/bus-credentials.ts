import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { nkeys } from "nats";

/** One bus user's nkey: the seed stays in its file; the server config holds the public key. */
export interface BusCredential {
  user: string;
  /** The seed file (mode 0600) the process reads through TOOLMESH_NATS_NKEY_FILE. */
  seedFile: string;
  publicKey: string;
}

/** Where the launcher keeps the bus's credentials and nats-server config: <data dir>/bus. */
export function busDir(dataDir: string): string {
  return path.join(dataDir, "bus");
}

/** The seed file of one bus user. */
export function seedFile(dataDir: string, user: string): string {
  return path.join(busDir(dataDir), `${user}.nk`);
}

/**
 * Returns an nkey per user, creating the missing ones (at first start) with mode 0600 in a
 * directory of mode 0700. nkeys, not passwords: nats-server keeps only public keys, and the
 * client proves it holds the seed by signing the server's nonce, so no secret crosses the wire
 * or sits in the server's config.
 */
export function ensureBusCredentials(dataDir: string, users: readonly string[]): BusCredential[] {
  const dir = busDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  return users.map((user) => {
    const file = seedFile(dataDir, user);
    let seed: Uint8Array;
    try {
      seed = new TextEncoder().encode(readFileSync(file, "utf8").trim());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      seed = nkeys.createUser().getSeed();
      // wx: two launchers racing on one data dir must not overwrite each other's key.
      writeFileSync(file, `${new TextDecoder().decode(seed)}\n`, { mode: 0o600, flag: "wx" });
    }
    chmodSync(file, 0o600);
    return { user, seedFile: file, publicKey: nkeys.fromSeed(seed).getPublicKey() };
  });
}

/**
 * The password a cluster's nodes authenticate their routes with, created at first start (mode
 * 0600) and kept, so a restarted node rejoins and no other process on the network can.
 */
export function ensureRoutePassword(dataDir: string): string {
  const dir = busDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, "route.password");
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const password = randomBytes(24).toString("hex");
  try {
    writeFileSync(file, `${password}\n`, { mode: 0o600, flag: "wx" });
  } catch (error) {
    // Another launcher (or bus-init) on the same data directory wrote it first: use theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    return readFileSync(file, "utf8").trim();
  }
  return password;
}
