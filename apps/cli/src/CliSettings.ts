/**
 * Every setting the CLI's processes read (docs/operations.md "Settings"):
 * `npm start` (start.ts), the operator CLI (main.ts) and `npm run migrate`
 * (migrate.ts) each check them all at start (libs/runtime/src/Settings.ts
 * `layer`), so a malformed one stops the command with one line before it
 * does anything; the docs test holds the table of docs/operations.md
 * "Settings" to this list and the other processes' lists. `npm start`
 * passes the environment on to the API and the dispatcher, which check
 * their own.
 */
import type { Setting } from "@school/runtime/SettingKinds"
import { DATABASE_URL, HOST, LOG_FORMAT, LOG_LEVEL, PORT } from "@school/runtime/Settings"
import { DATA_DIR } from "./Database.ts"

export const CliSettings: ReadonlyArray<Setting<unknown>> = [DATABASE_URL, DATA_DIR, PORT, HOST, LOG_LEVEL, LOG_FORMAT]
