import { createContextKey, type Interceptor } from "@connectrpc/connect";

/** When authentication of an RPC began (epoch ms), set before the auth interceptor runs. */
export const AUTH_STARTED = createContextKey<number | undefined>(undefined, {
  description: "toolmesh auth started (epoch ms)",
});

/** Notes when authentication begins, so a call's root span and its auth step start there. */
export const authTimingInterceptor: Interceptor = (next) => (req) => {
  req.contextValues.set(AUTH_STARTED, Date.now());
  return next(req);
};
