export {
  buildQuery,
  dataQueryInputSchema,
  dataQueryOutputSchema,
  dataQueryTool,
  openOrdersDatabase,
} from "./data-query.js";
