/**
 * The `raw-http` anchor: a bare `node:http` server answering every
 * request with the same bytes (BENCH_BODY_FILE) and the API's content type.
 * For context: what Node itself costs per request on this machine.
 *
 * Env: BENCH_BODY_FILE, PORT, HOST.
 */
import { readFileSync } from "node:fs"
import { createServer } from "node:http"

const body = readFileSync(process.env["BENCH_BODY_FILE"] ?? "")
const headers = { "content-type": "application/json; charset=utf-8", "content-length": String(body.length) }

const server = createServer((_request, response) => {
  response.writeHead(200, headers)
  response.end(body)
})

const shutdown = () => server.close(() => process.exit(0))
process.once("SIGTERM", shutdown)
process.once("SIGINT", shutdown)

server.listen(Number(process.env["PORT"] ?? 3002), process.env["HOST"] ?? "127.0.0.1")
