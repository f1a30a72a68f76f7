export * as ApiKey from "./ApiKey.ts"
