/**
 * The PostgreSQL client every process uses: one pool, snake_case columns
 * mapped to the camelCase-free names the API already speaks (we keep
 * snake_case end to end, so no name transform runs per row).
 */
import { PgClient } from "@effect/sql-pg"
import { Redacted } from "effect"

export interface SqlOptions {
  readonly url: string
  readonly maxConnections?: number
  readonly applicationName?: string
}

export const layer = (options: SqlOptions) =>
  PgClient.layer({
    url: Redacted.make(options.url),
    maxConnections: options.maxConnections ?? 10,
    applicationName: options.applicationName ?? "school-service"
  })
