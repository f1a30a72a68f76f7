/**
 * The long-running processes run with the same Node flags and environment
 * wherever they are started (libs/runtime/src/NodeFlags.ts): `npm run
 * start:api` and `start:dispatcher`, `npm start`'s children, the image's
 * default command and `ENV`, and the compose services. The benchmark starts
 * the API and the dispatcher with those scripts' environment, flags and files
 * (bench/lib/Paths.ts `scriptCommand`, read here too), so what it measures is
 * what runs. The scripts, the image and compose run the bundles
 * (apps/cli/src/build.ts); `npm start` runs the sources, and its children's
 * flags and environment are read from /proc while they run
 * (test/processes/start.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { NODE_FLAGS, PROCESS_ENV } from "@school/runtime/NodeFlags"
import { scriptCommand } from "../../bench/lib/Paths.ts"
import { argv, type ComposeFile, loadCompose, nodeCommand, parseDockerfile, readRepoFile, serviceEnv, stageEnv, stages, words } from "./support.ts"

const scripts: Record<string, string> = JSON.parse(readRepoFile("package.json")).scripts

describe("Node flags of the API and the dispatcher", () => {
  it("package.json's start scripts, the image's command and the compose services carry exactly their process's NODE_FLAGS and PROCESS_ENV", () => {
    assert.isAbove(NODE_FLAGS.api.length, 0)
    assert.isAbove(NODE_FLAGS.dispatcher.length, 0)
    const prefix = ["exec", "env", ...Object.entries(PROCESS_ENV).map(([name, value]) => `${name}=${value}`)]
    for (const [script, file, flags] of [["start:api", "apps/api/dist/main.js", NODE_FLAGS.api], ["start:dispatcher", "apps/dispatcher/dist/main.js", NODE_FLAGS.dispatcher]] as const) {
      const command = words(scripts[script] ?? "")
      assert.deepStrictEqual(command.slice(0, prefix.length), prefix, script)
      assert.deepStrictEqual(nodeCommand(command.slice(prefix.length)), { flags, file }, script)
      // What the benchmark reads from the same script.
      const bench = scriptCommand(script)
      assert.deepStrictEqual({ env: bench.env, flags: bench.nodeFlags, main: bench.main.endsWith(file) }, { env: PROCESS_ENV, flags, main: true }, `bench: ${script}`)
    }
    const final = stages(parseDockerfile(readRepoFile("Dockerfile"))).at(-1)
    assert.isDefined(final)
    const imageEnv = stageEnv(final!)
    for (const [name, value] of Object.entries(PROCESS_ENV)) assert.strictEqual(imageEnv[name], value, `Dockerfile ENV ${name}`)
    const cmd = final?.instructions.filter((i) => i.keyword === "CMD").map((i) => words(i.args)).pop() ?? []
    assert.deepStrictEqual(nodeCommand(cmd), { flags: NODE_FLAGS.api, file: "apps/api/dist/main.js" }, "Dockerfile CMD")
    // Its shape is checked against the Compose Specification in compose.test.ts.
    const services = (loadCompose() as ComposeFile).services
    for (const [name, file] of [["api", "apps/api/dist/main.js"], ["dispatcher", "apps/dispatcher/dist/main.js"]] as const) {
      assert.deepStrictEqual(nodeCommand(argv(services[name]?.command)), { flags: NODE_FLAGS[name], file }, `compose ${name}`)
      // The image's ENV reaches the service unless the service sets the same name.
      const environment = services[name] === undefined ? {} : serviceEnv(services[name])
      for (const variable of Object.keys(PROCESS_ENV)) assert.notProperty(environment, variable, `compose ${name} overrides the image's ${variable}`)
    }
  })

  it("npm run start:api and start:dispatcher build the bundles first", () => {
    assert.strictEqual(scripts["prestart:api"], "node apps/cli/src/build.ts")
    assert.strictEqual(scripts["prestart:dispatcher"], "node apps/cli/src/build.ts")
  })
})
