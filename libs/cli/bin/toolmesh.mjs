#!/usr/bin/env node
// The toolmesh command. The workspace's packages are TypeScript sources, so tsx loads them.
import { tsImport } from "tsx/esm/api";

const { main } = await tsImport("../src/main.ts", import.meta.url);
process.exitCode = await main(process.argv.slice(2));
