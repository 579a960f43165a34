import { defineConfig } from "vitest/config"

/** Shared vitest settings: unit tests exclude `*.int.test.ts`, which run in the `test:int` task. */
export const unit = defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/**/*.int.test.ts", "node_modules/**"],
    testTimeout: 30_000,
    pool: "threads"
  }
})

export const integration = defineConfig({
  test: {
    include: ["test/**/*.int.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 300_000,
    fileParallelism: false,
    pool: "forks"
  }
})
