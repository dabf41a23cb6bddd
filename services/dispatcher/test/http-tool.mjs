// A local tool speaking JSON over HTTP: GET /healthz, POST /invoke echoes its arguments with its
// pid (and answers 400, a failure, when they ask it to: {"fail": true}). {"sleep_ms": n} answers
// after n ms; {"burn_ms": n} keeps the CPU busy for n ms first.
import http from "node:http";

const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/healthz") return void res.writeHead(200).end("ok");
  let body = "";
  req.on("data", (chunk) => {
    body += chunk;
  });
  req.on("end", () => {
    const args = JSON.parse(body || "{}");
    if (args.fail === true) return void res.writeHead(400).end("failing as asked");
    if (typeof args.burn_ms === "number") {
      const until = performance.now() + args.burn_ms;
      while (performance.now() < until);
    }
    const answer = () => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ pid: process.pid, args }));
    };
    if (typeof args.sleep_ms === "number") setTimeout(answer, args.sleep_ms);
    else answer();
  });
});
server.listen(Number(process.env.TOOLMESH_TOOL_PORT), "127.0.0.1");
