// The layering toolmesh keeps (ARCHITECTURE.md, "Layout"), checked by `npm run lint`.
const dispatcher = "^services/dispatcher/src";
/** A Dispatcher layer may import only the layers listed below it. */
const below = (layer, allowed) => ({
  name: `dispatcher-${layer}-layer`,
  comment: `the Dispatcher's ${layer}/ may import only ${allowed.join(", ") || "libs"} (transports → approvals → chain → records, runtimes, catalog)`,
  severity: "error",
  from: { path: `${dispatcher}/${layer}/` },
  to: {
    path: `${dispatcher}/`,
    pathNot: [`${dispatcher}/${layer}/`, ...allowed.map((a) => `${dispatcher}/${a}/`)],
  },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "no import loops anywhere, type-only imports included",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "services-are-apart",
      comment: "a service never imports another service; what two share lives in libs/",
      severity: "error",
      from: { path: "^services/([^/]+)/" },
      to: { path: "^services/", pathNot: "^services/$1/" },
    },
    {
      name: "libs-below-services",
      comment: "libs never import services",
      severity: "error",
      from: { path: "^libs/" },
      to: { path: "^services/" },
    },
    {
      name: "tests-keep-to-their-package",
      comment:
        "tests never import another package's test folder (shared test tools live in libs/testkit)",
      severity: "error",
      from: { path: "^(services|libs)/([^/]+)/" },
      to: { path: "^(services|libs)/([^/]+)/test/", pathNot: "^$1/$2/test/" },
    },
    {
      name: "only-main-and-server-know-every-part",
      comment: "nothing but main.ts imports server.ts, and nothing imports main.ts",
      severity: "error",
      from: { path: "^services/[^/]+/src/", pathNot: "^services/[^/]+/src/main\\.ts$" },
      to: { path: "^services/[^/]+/src/(server|main)\\.ts$" },
    },
    below("transports", ["approvals", "chain", "records", "runtimes", "catalog"]),
    below("approvals", ["chain", "records", "catalog"]),
    below("chain", ["records", "runtimes", "catalog"]),
    below("records", []),
    below("runtimes", []),
    below("catalog", []),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist|gen|health)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".mjs", ".cjs"],
    },
    moduleSystems: ["es6", "cjs"],
  },
};
