/**
 * School plans and their per-key request budgets (docs/integrators.md "Limits", docs/decisions.md
 * "Rate limits", "Plans and key issuance").
 */
import * as Schema from "effect/Schema"

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

/** The plans on which a school may issue API keys (docs/back-office.md "API keys"): Extended and above. */
export const KEY_ISSUING_PLANS: ReadonlyArray<Plan> = ["extended", "pro"]

/**
 * Issuing API keys needs Extended or above (docs/back-office.md "API keys"); no plan, or one this
 * code does not know, is below Extended (docs/decisions.md "Plans and key
 * issuance"). The one rule for the back office and the operator CLI.
 */
export const canIssueKeys = (plan: string | null): boolean => KEY_ISSUING_PLANS.some((issuing) => issuing === plan)

/** Why a school on `plan` may not issue keys: names the plan needed and the one it has. */
export const keysNeedPlanMessage = (plan: string | null): string =>
  `Issuing API keys needs the Extended or Pro plan; this school ${
    plan === null ? "has no plan" : `is on the ${plan} plan`
  }.`
