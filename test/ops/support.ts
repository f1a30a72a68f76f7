/**
 * Reading the container files the way Docker and Compose do, for the tests
 * of test/ops (docs/operations.md "Container image"): the Dockerfile as a list
 * of instructions per stage, `.dockerignore` with Docker's matching rules,
 * docker-compose.yml with Compose's `${VAR:-default}` interpolation, and the
 * settings table of docs/operations.md.
 *
 * `buildImage` replays the Dockerfile into a temporary directory: each
 * stage's filesystem is a directory (a copy of an earlier stage's when it is
 * `FROM` that stage), `COPY` copies from the repository (what
 * `.dockerignore` leaves of it) or from an earlier stage, `RUN npm ci …` runs
 * npm with the Node that runs the tests (the pinned Node 24, as in
 * `node:24-slim`), and `RUN node <file> …` runs that file with it (the
 * build stage's bundler, apps/cli/src/build.ts). The base image's own files are not there, and need not be:
 * the processes find everything they load under the image's WORKDIR.
 */
import { BUNDLES } from "@school/cli/build"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url))
export const readRepoFile = (path: string): string => Fs.readFileSync(Path.join(repoRoot, path), "utf8")

// ---------------------------------------------------------------------------
// Dockerfile

export interface Instruction {
  /** Upper-cased: FROM, COPY, RUN, … */
  readonly keyword: string
  /** The rest of the instruction, continuation lines joined. */
  readonly args: string
  /** 1-based line of the instruction's first line. */
  readonly line: number
}

export interface Stage {
  readonly base: string
  readonly name: string | undefined
  readonly instructions: ReadonlyArray<Instruction>
}

/** The Dockerfile's instructions, comments dropped and `\` continuations joined. */
export const parseDockerfile = (text: string): ReadonlyArray<Instruction> => {
  const instructions: Array<Instruction> = []
  let pending: { text: string; line: number } | undefined
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim()
    if (pending === undefined && (line === "" || line.startsWith("#"))) return
    if (pending !== undefined && line.startsWith("#")) return
    const continued = line.endsWith("\\")
    const content = continued ? line.slice(0, -1).trim() : line
    pending = pending === undefined ? { text: content, line: index + 1 } : { ...pending, text: `${pending.text} ${content}` }
    if (!continued) {
      const match = /^(\S+)\s*(.*)$/.exec(pending.text)
      if (match !== null) instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]!, line: pending.line })
      pending = undefined
    }
  })
  return instructions
}

/** The instructions grouped by `FROM`. */
export const stages = (instructions: ReadonlyArray<Instruction>): ReadonlyArray<Stage> => {
  const result: Array<{ base: string; name: string | undefined; instructions: Array<Instruction> }> = []
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const [base = "", as, name] = instruction.args.split(/\s+/)
      result.push({ base, name: as?.toUpperCase() === "AS" ? name : undefined, instructions: [] })
    } else if (result.length > 0) {
      result[result.length - 1]!.instructions.push(instruction)
    }
  }
  return result
}

/** An exec-form (`["a", "b"]`) or shell-form argument list. */
export const words = (args: string): ReadonlyArray<string> => {
  const trimmed = args.trim()
  if (trimmed.startsWith("[")) {
    const parsed: unknown = JSON.parse(trimmed)
    if (!Array.isArray(parsed) || !parsed.every((word): word is string => typeof word === "string")) {
      throw new Error(`not a JSON array of strings: ${args}`)
    }
    return parsed
  }
  return trimmed.split(/\s+/).filter((word) => word !== "")
}

export interface Copy {
  readonly from: string | undefined
  readonly sources: ReadonlyArray<string>
  readonly destination: string
}

export const parseCopy = (args: string): Copy => {
  const all = words(args)
  const flags = all.filter((word) => word.startsWith("--"))
  const paths = all.filter((word) => !word.startsWith("--"))
  const from = flags.find((flag) => flag.startsWith("--from="))?.slice("--from=".length)
  return { from, sources: paths.slice(0, -1), destination: paths[paths.length - 1] ?? "" }
}

/** The `ENV` settings of a stage (`ENV A=1 B=2` form). */
export const stageEnv = (stage: Stage): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const instruction of stage.instructions) {
    if (instruction.keyword !== "ENV") continue
    for (const pair of instruction.args.match(/\S+=("[^"]*"|\S+)/g) ?? []) {
      const at = pair.indexOf("=")
      env[pair.slice(0, at)] = pair.slice(at + 1).replace(/^"(.*)"$/, "$1")
    }
  }
  return env
}

// ---------------------------------------------------------------------------
// .dockerignore (Docker's rules: a pattern excludes a path when it matches
// the path or one of its parent directories; `**` spans directories; a later
// `!pattern` re-includes; the last matching pattern decides)

interface IgnoreRule {
  readonly exception: boolean
  readonly pattern: string
  readonly regex: RegExp
}

const globToRegex = (pattern: string): RegExp => {
  let source = ""
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!
    if (c === "*" && pattern[i + 1] === "*") {
      // `**/` matches zero or more directories; a trailing `**` anything.
      if (pattern[i + 2] === "/") {
        source += "(?:.*/)?"
        i += 2
      } else {
        source += ".*"
        i += 1
      }
    } else if (c === "*") source += "[^/]*"
    else if (c === "?") source += "[^/]"
    else source += c.replace(/[.+^${}()|[\]\\]/g, "\\$&")
  }
  return new RegExp(`^${source}$`)
}

export const parseDockerignore = (text: string): ReadonlyArray<IgnoreRule> =>
  text.split("\n").map((line) => line.trim()).filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const exception = line.startsWith("!")
    const pattern = Path.posix.normalize((exception ? line.slice(1) : line).trim()).replace(/^\/+|\/+$/g, "")
    return { exception, pattern, regex: globToRegex(pattern) }
  })

/** Whether `.dockerignore` keeps `path` (relative to the context, `/`-separated) out of the build context. */
export const isIgnored = (rules: ReadonlyArray<IgnoreRule>, path: string): boolean => {
  const parts = path.split("/")
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join("/"))
  let ignored = false
  for (const rule of rules) {
    if (prefixes.some((prefix) => rule.regex.test(prefix))) ignored = !rule.exception
  }
  return ignored
}

/** Whether some exception rule may re-include a path under `directory`. */
const mayReinclude = (rules: ReadonlyArray<IgnoreRule>, directory: string): boolean =>
  rules.some((rule) => rule.exception && (rule.pattern.startsWith(`${directory}/`) || rule.pattern.startsWith("*")))

// ---------------------------------------------------------------------------
// Replaying the Dockerfile

export interface Image {
  /** The final stage's WORKDIR, as a directory on this machine. */
  readonly workdir: string
  readonly env: Readonly<Record<string, string>>
  readonly cmd: ReadonlyArray<string>
  readonly user: string | undefined
  /** Per RUN: the command and how long it took (ms). */
  readonly runs: ReadonlyArray<{ readonly command: string; readonly ms: number }>
}

/** The npm CLI (JavaScript) to run with the tests' Node: npm's own when run through `npm test`, else the one on PATH. */
const npmCli = (): string => {
  const candidates = [process.env["npm_execpath"]]
  for (const dir of (process.env["PATH"] ?? "").split(Path.delimiter)) candidates.push(Path.join(dir, "npm"))
  for (const candidate of candidates) {
    if (candidate === undefined || !Fs.existsSync(candidate)) continue
    const real = Fs.realpathSync(candidate)
    if (real.endsWith(".js") && Path.basename(real).startsWith("npm")) return real
  }
  throw new Error("no npm CLI found (npm_execpath, or npm on PATH)")
}

const copyFromContext = (rules: ReadonlyArray<IgnoreRule>, source: string, target: string): number => {
  const from = Path.join(repoRoot, source)
  if (isIgnored(rules, source) && !(Fs.statSync(from).isDirectory() && mayReinclude(rules, source))) {
    throw new Error(`COPY ${source}: excluded by .dockerignore (Docker: "not found")`)
  }
  if (Fs.statSync(from).isFile()) {
    Fs.mkdirSync(Path.dirname(target), { recursive: true })
    Fs.copyFileSync(from, target)
    return 1
  }
  let copied = 0
  for (const entry of Fs.readdirSync(from, { withFileTypes: true })) {
    const relative = `${source}/${entry.name}`
    if (entry.isDirectory()) {
      if (isIgnored(rules, relative) && !mayReinclude(rules, relative)) continue
      copied += copyFromContext(rules, relative, Path.join(target, entry.name))
    } else if (!isIgnored(rules, relative)) {
      copied += copyFromContext(rules, relative, Path.join(target, entry.name))
    }
  }
  return copied
}

/**
 * Replays `Dockerfile` (with `.dockerignore`) into `into`: one directory per
 * stage standing for its `/`. Supports FROM, WORKDIR, COPY (context or
 * `--from`), ENV, USER, EXPOSE, CMD, `RUN npm ci …` and `RUN node <file> …`; anything else fails,
 * so a new instruction is noticed here.
 */
export const buildImage = (into: string): Image => {
  const rules = parseDockerignore(readRepoFile(".dockerignore"))
  const all = stages(parseDockerfile(readRepoFile("Dockerfile")))
  const roots = new Map<string, string>()
  const runs: Array<{ command: string; ms: number }> = []
  let image: Image | undefined
  const workdirs = new Map<string, string>()
  all.forEach((stage, index) => {
    const root = Path.join(into, `stage-${index}`)
    Fs.mkdirSync(root, { recursive: true })
    // FROM an earlier stage: its files and its WORKDIR, as Docker starts from that stage's image.
    const baseRoot = roots.get(stage.base)
    if (baseRoot !== undefined) Fs.cpSync(baseRoot, root, { recursive: true, verbatimSymlinks: true })
    roots.set(String(index), root)
    if (stage.name !== undefined) roots.set(stage.name, root)
    let workdir = workdirs.get(stage.base) ?? "/"
    let user: string | undefined
    let cmd: ReadonlyArray<string> = []
    for (const { args, keyword, line } of stage.instructions) {
      const here = (path: string) => Path.join(root, Path.posix.resolve(workdir, path))
      switch (keyword) {
        case "WORKDIR":
          workdir = Path.posix.resolve(workdir, args.trim())
          Fs.mkdirSync(here("."), { recursive: true })
          break
        case "COPY": {
          const copy = parseCopy(args)
          for (const source of copy.sources) {
            const target = copy.destination.endsWith("/") ? Path.join(here(copy.destination), Path.basename(source)) : here(copy.destination)
            if (copy.from === undefined) {
              copyFromContext(rules, Path.posix.normalize(source).replace(/^\.\/?/, "").replace(/\/$/, "") || ".", target)
            } else {
              const fromRoot = roots.get(copy.from)
              if (fromRoot === undefined) throw new Error(`line ${line}: COPY --from=${copy.from}: no such stage`)
              Fs.cpSync(Path.join(fromRoot, source), target, { recursive: true, verbatimSymlinks: true })
            }
          }
          break
        }
        case "RUN": {
          const command = words(args)
          const started = Date.now()
          const run = (argv: ReadonlyArray<string>, timeout: number) =>
            execFileSync(process.execPath, [...argv], {
              cwd: here("."),
              stdio: ["ignore", "pipe", "pipe"],
              env: { ...process.env, ...stageEnv(stage), npm_config_update_notifier: "false" },
              timeout
            })
          if (command[0] === "npm" && command[1] === "ci") run([npmCli(), ...command.slice(1)], 240_000)
          else if (command[0] === "node" && command.length > 1) run(command.slice(1), 60_000)
          else throw new Error(`line ${line}: the replay runs only "npm ci" and "node <file>", not: ${args}`)
          runs.push({ command: args, ms: Date.now() - started })
          break
        }
        case "USER":
          user = args.trim()
          break
        case "CMD":
          cmd = words(args)
          break
        case "ENV":
        case "EXPOSE":
        case "ARG":
        case "LABEL":
          break
        default:
          throw new Error(`line ${line}: the replay does not know ${keyword}`)
      }
    }
    workdirs.set(String(index), workdir)
    if (stage.name !== undefined) workdirs.set(stage.name, workdir)
    image = { workdir: Path.join(root, workdir), env: stageEnv(stage), cmd, user, runs }
  })
  if (image === undefined) throw new Error("Dockerfile: no stage")
  return image
}

// ---------------------------------------------------------------------------
// docker-compose.yml

/** Compose's interpolation with an empty environment: `${VAR:-default}` → default, `${VAR}` → "", `$$` → `$`. */
export const interpolate = (value: string): string =>
  value.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, _name, fallback: string | undefined) =>
    whole === "$$" ? "$" : fallback ?? "")

export interface Healthcheck {
  readonly test?: string | ReadonlyArray<string>
  readonly timeout?: string
}

/** A Compose duration such as `3s`, `500ms`, `1m30s`, in milliseconds. */
export const composeDuration = (text: string): number => {
  let total = 0
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|us|s|m|h)/g)) {
    total += Number(amount) * { us: 0.001, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as "us" | "ms" | "s" | "m" | "h"]
  }
  return total
}

export interface Service {
  readonly image?: string
  readonly build?: unknown
  readonly command?: string | ReadonlyArray<string>
  readonly environment?: Readonly<Record<string, string | number | boolean | null>> | ReadonlyArray<string>
  readonly ports?: ReadonlyArray<string | number | { readonly target: number; readonly published?: string | number }>
  readonly volumes?: ReadonlyArray<string | { readonly type?: string; readonly source?: string; readonly target: string }>
  readonly depends_on?: ReadonlyArray<string> | Readonly<Record<string, { readonly condition?: string }>>
  readonly healthcheck?: Healthcheck
  readonly restart?: string
}

export interface ComposeFile {
  readonly services: Readonly<Record<string, Service>>
  readonly volumes?: Readonly<Record<string, unknown>>
}

/** docker-compose.yml as data (YAML 1.2 core schema, as Compose reads it). */
export const loadCompose = (text: string = readRepoFile("docker-compose.yml")): unknown => parse(text)

/** A service's environment as name → value, interpolated. */
export const serviceEnv = (service: Service): Record<string, string> => {
  const env: Record<string, string> = {}
  const entries = service.environment ?? {}
  if (Array.isArray(entries)) {
    for (const entry of entries as ReadonlyArray<string>) {
      const at = entry.indexOf("=")
      if (at > 0) env[entry.slice(0, at)] = interpolate(entry.slice(at + 1))
      else env[entry] = ""
    }
  } else {
    for (const [name, value] of Object.entries(entries)) env[name] = value === null ? "" : interpolate(String(value))
  }
  return env
}

/** A `command` or `healthcheck.test` as an argument list. */
export const argv = (command: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  command === undefined ? [] : typeof command === "string" ? words(command) : command.map(interpolate)

/** A `node …` command split into its Node flags and the file it runs (the first argument that is not a flag). */
export const nodeCommand = (command: ReadonlyArray<string>): { readonly flags: ReadonlyArray<string>; readonly file: string | undefined } => {
  const at = command.findIndex((arg, i) => i > 0 && !arg.startsWith("-"))
  return at === -1 ? { flags: command.slice(1), file: undefined } : { flags: command.slice(1, at), file: command[at] }
}

/**
 * Whether the image holds `file` (a path from the WORKDIR): a file of the repository that
 * .dockerignore lets through, or one of the bundles its build stage makes (apps/cli/src/build.ts
 * BUNDLES; the Dockerfile check holds the final stage to copying them).
 */
export const inImage = (file: string): boolean =>
  BUNDLES.some((bundle) => bundle.output === file) ||
  (Fs.existsSync(Path.join(repoRoot, file)) && !isIgnored(parseDockerignore(readRepoFile(".dockerignore")), file))

/** The container ports a service publishes. */
export const publishedTargets = (service: Service): ReadonlyArray<number> =>
  (service.ports ?? []).map((port) => {
    if (typeof port === "object") return port.target
    const text = String(port).replace(/\/(tcp|udp)$/, "")
    return Number(text.split(":").pop())
  })

// ---------------------------------------------------------------------------
// docs/operations.md "Settings"

/** Every name in the first column of the settings table. */
export const documentedSettings = (): ReadonlySet<string> => {
  const text = readRepoFile("docs/operations.md")
  const start = text.indexOf("\n## Settings")
  const end = text.indexOf("\n## ", start + 1)
  const names = new Set<string>()
  for (const line of text.slice(start, end).split("\n")) {
    const first = /^\|([^|]+)\|/.exec(line)
    if (first === null) continue
    for (const name of first[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(name[1]!)
  }
  return names
}

// ---------------------------------------------------------------------------
// docs/operations.md "Container image": the commands it tells an operator to run

/**
 * A command line split into words as a POSIX shell would, for the plain lines the docs show:
 * blanks separate words, single quotes keep everything, double quotes keep all but `\"` and
 * `\\`, a backslash outside quotes escapes the next character. Anything that needs a real shell
 * (`$`, a backquote, `|`, `;`, `&`, `<`, `>` outside single quotes) is refused.
 */
export const shellWords = (line: string): ReadonlyArray<string> => {
  const result: Array<string> = []
  let word: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (c === " " || c === "\t") {
      if (word !== undefined) result.push(word)
      word = undefined
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1)
      if (end === -1) throw new Error(`unterminated ' in: ${line}`)
      word = (word ?? "") + line.slice(i + 1, end)
      i = end
    } else if (c === "\"") {
      word ??= ""
      for (i++; i < line.length && line[i] !== "\""; i++) {
        if (line[i] === "\\" && (line[i + 1] === "\"" || line[i + 1] === "\\")) i++
        else if (line[i] === "$" || line[i] === "`") throw new Error(`a shell expansion in: ${line}`)
        word += line[i]
      }
      if (i >= line.length) throw new Error(`unterminated " in: ${line}`)
    } else if (c === "\\") {
      word = (word ?? "") + (line[++i] ?? "")
    } else if ("$`|;&<>".includes(c)) {
      throw new Error(`"${c}" needs a shell: ${line}`)
    } else {
      word = (word ?? "") + c
    }
  }
  if (word !== undefined) result.push(word)
  return result
}

/** The text of the `### Container image` section of docs/operations.md. */
export const containerImageSection = (): string => {
  const text = readRepoFile("docs/operations.md")
  const start = text.indexOf("\n### Container image\n")
  if (start === -1) throw new Error(`docs/operations.md: no "Container image" section`)
  const next = text.slice(start + 1).search(/\n##+ /)
  return next === -1 ? text.slice(start) : text.slice(start, start + 1 + next)
}

/** Each `docker compose run --rm <service> <command…>` line of the section's sh blocks: the service and the command's words. */
export const documentedComposeRuns = (): ReadonlyArray<{ readonly service: string; readonly command: ReadonlyArray<string> }> =>
  [...containerImageSection().matchAll(/^```sh\n([\s\S]*?)^```$/gmu)]
    .flatMap((block) => (block[1] ?? "").split("\n"))
    .filter((line) => line.startsWith("docker compose run "))
    .map((line) => {
      const words = shellWords(line)
      const [docker, compose, run, rm, service, ...command] = words
      if (docker !== "docker" || compose !== "compose" || run !== "run" || rm !== "--rm" || service === undefined) {
        throw new Error(`not "docker compose run --rm <service> …": ${line}`)
      }
      return { service, command }
    })
