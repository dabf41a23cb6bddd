export { commands, main } from "./main.js";
export {
  buildWaterfall,
  type Waterfall,
  type WaterfallEvent,
  type WaterfallRow,
} from "./waterfall.js";
