import type { JsonObject } from "@bufbuild/protobuf";
import initSqlJs, { type Database, type SqlValue } from "sql.js";
import { defineTool, type ToolDefinition } from "../define-tool.js";
import { ToolError } from "../tool-error.js";

/** Columns of the seeded `orders` table; the only names that ever reach SQL text. */
const columns = ["id", "customer", "region", "status", "amount", "created_at"] as const;
type Column = (typeof columns)[number];

const operators = {
  eq: "=",
  ne: "<>",
  lt: "<",
  lte: "<=",
  gt: ">",
  gte: ">=",
  like: "LIKE",
  in: "IN",
} as const;
type Operator = keyof typeof operators;

interface Filter {
  column: Column;
  op: Operator;
  value: string | number | (string | number)[];
}

interface QueryArgs {
  filters?: Filter[];
  columns?: Column[];
  order_by?: { column: Column; direction?: "asc" | "desc" };
  limit?: number;
}

const scalar: JsonObject = { oneOf: [{ type: "string", maxLength: 200 }, { type: "number" }] };

/** Input schema of data.query: filters over a whitelisted set of columns. */
export const dataQueryInputSchema: JsonObject = {
  type: "object",
  additionalProperties: false,
  properties: {
    filters: {
      type: "array",
      maxItems: 10,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["column", "op", "value"],
        properties: {
          column: { enum: [...columns] as string[] },
          op: { enum: Object.keys(operators) },
          value: { oneOf: [scalar, { type: "array", minItems: 1, maxItems: 50, items: scalar }] },
        },
      },
    },
    columns: {
      type: "array",
      minItems: 1,
      uniqueItems: true,
      items: { enum: [...columns] as string[] },
    },
    order_by: {
      type: "object",
      additionalProperties: false,
      required: ["column"],
      properties: {
        column: { enum: [...columns] as string[] },
        direction: { enum: ["asc", "desc"] },
      },
    },
    limit: { type: "integer", minimum: 1, maximum: 1000 },
  },
};

/** Output schema of data.query. */
export const dataQueryOutputSchema: JsonObject = {
  type: "object",
  required: ["rows", "row_count"],
  properties: {
    rows: { type: "array", items: { type: "object" } },
    row_count: { type: "integer", minimum: 0 },
  },
};

const regions = ["north", "south", "east", "west"];
const statuses = ["open", "shipped", "cancelled"];

/** An in-memory SQLite database with a seeded `orders` table of 200 rows. */
export async function openOrdersDatabase(): Promise<Database> {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  db.run(
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, region TEXT NOT NULL, status TEXT NOT NULL, amount REAL NOT NULL, created_at TEXT NOT NULL)",
  );
  const insert = db.prepare(
    "INSERT INTO orders (id, customer, region, status, amount, created_at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  for (let id = 1; id <= 200; id++) {
    const day = String((id % 28) + 1).padStart(2, "0");
    insert.run([
      id,
      `customer-${(id % 17) + 1}`,
      regions[id % regions.length] as string,
      statuses[id % statuses.length] as string,
      Math.round(((id * 37) % 1000) * 100) / 100 + 10,
      `2026-0${(id % 9) + 1}-${day}`,
    ]);
  }
  insert.free();
  return db;
}

/** Builds parameterised SQL: values only ever travel as parameters. */
export function buildQuery(args: QueryArgs): { sql: string; params: SqlValue[] } {
  const params: SqlValue[] = [];
  const where: string[] = [];
  for (const filter of args.filters ?? []) {
    const column = whitelisted(filter.column);
    const op = operators[filter.op];
    if (filter.op === "in") {
      const values = Array.isArray(filter.value) ? filter.value : [filter.value];
      where.push(`${column} IN (${values.map(() => "?").join(", ")})`);
      params.push(...values);
    } else {
      if (Array.isArray(filter.value)) {
        throw new ToolError(
          "bad_filter",
          `filter on ${column} with op ${filter.op} needs one value, not a list`,
        );
      }
      where.push(`${column} ${op} ?`);
      params.push(filter.value);
    }
  }
  const selected = (args.columns ?? [...columns]).map(whitelisted).join(", ");
  let sql = `SELECT ${selected} FROM orders`;
  if (where.length > 0) sql += ` WHERE ${where.join(" AND ")}`;
  if (args.order_by) {
    sql += ` ORDER BY ${whitelisted(args.order_by.column)} ${args.order_by.direction === "desc" ? "DESC" : "ASC"}`;
  } else {
    sql += " ORDER BY id ASC";
  }
  sql += " LIMIT ?";
  params.push(args.limit ?? 100);
  return { sql, params };
}

function whitelisted(column: string): Column {
  if (!(columns as readonly string[]).includes(column)) {
    throw new ToolError("bad_column", `unknown column "${column}"; columns: ${columns.join(", ")}`);
  }
  return column as Column;
}

/** data.query: rows of the orders table matching the filters. */
export function dataQueryTool(db: Database): ToolDefinition<QueryArgs> {
  return defineTool<QueryArgs>({
    name: "data.query",
    description:
      "Query the orders table (id, customer, region, status, amount, created_at) with filters such as {column: 'region', op: 'eq', value: 'north'}; returns rows.",
    category: "data",
    inputSchema: dataQueryInputSchema,
    outputSchema: dataQueryOutputSchema,
    requiredScopes: ["read:data"],
    idempotent: true,
    sideEffects: false,
    timeoutMs: 5000,
    retryPolicy: { maxAttempts: 3, initialBackoffMs: 50, maxBackoffMs: 500 },
    handler(args, ctx) {
      const { sql, params } = buildQuery(args);
      ctx.trace("DATA_QUERY", { sql, parameter_count: params.length });
      const statement = db.prepare(sql);
      const rows: JsonObject[] = [];
      try {
        statement.bind(params);
        while (statement.step()) rows.push(statement.getAsObject() as JsonObject);
      } finally {
        statement.free();
      }
      ctx.trace("DATA_RESULT", { row_count: rows.length });
      return { rows, row_count: rows.length };
    },
  });
}
