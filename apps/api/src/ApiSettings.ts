/**
 * Every setting the API process reads (docs/operations.md "Settings"), each
 * defined next to the code that uses it. `main.ts` checks them all at start
 * (libs/runtime/src/Settings.ts `layer`), so a malformed one stops the
 * process with one line before it does anything; the docs test holds the
 * table of docs/operations.md "Settings" to this list and the other
 * processes' lists. METRICS_PORT (a listener of its own for /metrics,
 * apps/api/src/Metrics.ts) comes with SERVING: the dispatcher reads it too.
 */
import type { Setting } from "@school/runtime/SettingKinds"
import { PORT, SERVING } from "@school/runtime/Settings"
import { TRUST_PROXY } from "./ClientAddress.ts"
import { SESSION_TTL } from "./http/backoffice/Sessions.ts"
import { WEBHOOK_ACTIONS_PER_MINUTE, WEBHOOK_MAX_SUBSCRIPTIONS } from "./http/backoffice/Webhooks.ts"
import { IDEMPOTENCY_WAIT } from "./IdempotentWrite.ts"
import { RATE_LIMIT_WINDOW } from "./RateLimiter.ts"

export const ApiSettings: ReadonlyArray<Setting<unknown>> = [
  ...SERVING,
  PORT,
  IDEMPOTENCY_WAIT,
  WEBHOOK_MAX_SUBSCRIPTIONS,
  WEBHOOK_ACTIONS_PER_MINUTE,
  RATE_LIMIT_WINDOW,
  SESSION_TTL,
  TRUST_PROXY
]
