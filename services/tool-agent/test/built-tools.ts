/** A busybox CGI script: upper-cases `text` (the docker tool the scripted CodingAgent builds). */
export const SHOUT_CGI = [
  "#!/bin/sh",
  "printf 'Content-Type: application/json\\r\\n\\r\\n'",
  `text=$(sed -n 's/.*"text" *: *"\\([^"]*\\)".*/\\1/p')`,
  `printf '{"text":"%s"}' "$(printf %s "$text" | tr a-z A-Z)"`,
  "",
].join("\n");

/** A Python HTTP tool counting words (the uv tool the scripted CodingAgent builds). */
export const WORDS_PY = `import json, os
from http.server import BaseHTTPRequestHandler, HTTPServer

def count(text):
    return len(text.split())

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/healthz" else 404)
        self.end_headers()

    def do_POST(self):
        size = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(size) or b"{}")
        out = json.dumps({"words": count(body.get("text", ""))}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass

if __name__ == "__main__":
    HTTPServer(("127.0.0.1", int(os.environ["TOOLMESH_TOOL_PORT"])), Handler).serve_forever()
`;
