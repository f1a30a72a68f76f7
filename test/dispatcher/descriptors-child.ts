/**
 * Run by test/dispatcher/descriptors.test.ts in a child process under a low
 * descriptor limit (`prlimit --nofile`): builds the dispatcher's receiver
 * client, takes every free descriptor (opening /dev/null until EMFILE),
 * sends one POST to a receiver by address and one by name (argv 2 and 3),
 * gives the descriptors back and sends again; prints the client's socket
 * bound and the three outcomes as one JSON line on stdout.
 */
import { Duration, Effect, ManagedRuntime } from "effect"
import * as Fs from "node:fs"
import { Receiver } from "../../libs/runtime/src/Receiver.ts"

const [byAddress = "", byName = ""] = process.argv.slice(2)

// More attempts than the descriptor limit allows sockets: the bound is what the limit leaves.
const runtime = ManagedRuntime.make(
  Receiver.layer({ concurrency: 400, timeout: Duration.seconds(5), allowInsecureUrls: true })
)
const send = (url: string) =>
  runtime.runPromise(Receiver.use((receiver) => receiver.send({ url, headers: { "content-type": "application/json" }, body: "{}" })))

/** Opens /dev/null until the process has no descriptor left: how many it took. */
const exhaust = (): Array<number> => {
  const held: Array<number> = []
  for (;;) {
    try {
      held.push(Fs.openSync("/dev/null", "r"))
    } catch (error) {
      if (error instanceof Error && "code" in error && error.code === "EMFILE") return held
      throw error
    }
  }
}

const main = async () => {
  // The client is built (and its modules loaded) before the descriptors run out.
  const bound = await runtime.runPromise(Receiver.use((receiver) => Effect.succeed(receiver.bound)))
  const held = exhaust()
  const starved = await send(byAddress)
  const starvedByName = await send(byName)
  for (const fd of held) Fs.closeSync(fd)
  const after = await send(byAddress)
  await runtime.dispose()
  process.stdout.write(`${JSON.stringify({ bound, held: held.length, starved, starvedByName, after })}\n`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
