/**
 * School plans and their per-key request budgets (spec 8, docs/decisions.md
 * "Rate limits", "Plans and key issuance").
 */
import { Schema } from "effect"

export const Plan = Schema.Literals(["basic", "economy", "standard", "extended", "pro"])
export type Plan = typeof Plan.Type

/** Requests per 60-second window for a key of a school on the given plan (null: none or unknown). */
export const budgetPerMinute = (plan: string | null): number => {
  switch (plan) {
    case "extended":
      return 300
    case "pro":
      return 600
    default:
      return 120
  }
}

/** Issuing API keys needs Extended or above (spec 5.2). */
export const canIssueKeys = (plan: string | null): boolean => plan === "extended" || plan === "pro"
