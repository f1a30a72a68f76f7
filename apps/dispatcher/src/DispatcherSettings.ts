/**
 * Every setting the dispatcher process reads (docs/operations.md
 * "Settings"), each defined next to the code that uses it. `main.ts` checks
 * them all at start (libs/runtime/src/Settings.ts `layer`), so a malformed
 * one stops the process with one line before it does anything; the docs
 * test holds the table of docs/operations.md "Settings" to this list and
 * the other processes' lists. SHUTDOWN_TIMEOUT is the API's bound, checked
 * here too with SHUTDOWN_DELAY: a shutdown setting is checked by both
 * processes that shut down gracefully. METRICS_PORT (a listener of its own
 * for /metrics) comes with SERVING: the API reads it too.
 */
import type { Setting } from "@school/runtime/SettingKinds"
import { DISPATCHER_PORT, SERVING } from "@school/runtime/Settings"
import {
  DELIVERY_RETENTION,
  DISPATCHER_CONCURRENCY,
  DISPATCHER_PER_SUBSCRIPTION,
  WEBHOOK_RETRY_DELAYS,
  WEBHOOK_TIMEOUT
} from "./Dispatcher.ts"

export const DispatcherSettings: ReadonlyArray<Setting<unknown>> = [
  ...SERVING,
  WEBHOOK_RETRY_DELAYS,
  WEBHOOK_TIMEOUT,
  DISPATCHER_CONCURRENCY,
  DISPATCHER_PER_SUBSCRIPTION,
  DISPATCHER_PORT,
  DELIVERY_RETENTION
]
