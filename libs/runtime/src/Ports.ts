/**
 * Owns finding a free TCP port on 127.0.0.1: for the embedded PostgreSQL,
 * and for the API processes the tests and the benchmark start.
 */
import { Effect } from "effect"
import * as Net from "node:net"

/** A TCP port that was free on 127.0.0.1 a moment ago. The system refusing one is a defect. */
export const freePort: Effect.Effect<number> = Effect.callback<number, Error>((resume) => {
  const server = Net.createServer()
  server.unref()
  server.once("error", (error) => resume(Effect.fail(error)))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = address !== null && typeof address === "object" ? address.port : 0
    server.close(() => resume(port > 0 ? Effect.succeed(port) : Effect.fail(new Error("no free port on 127.0.0.1"))))
  })
}).pipe(Effect.orDie)
