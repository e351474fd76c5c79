// `npm run test:faults`: the fault-injection tier (test/faults/), real API and worker processes behind
// TCP fault proxies, on the suite's stack. Durations come from FAULT_* variables (docs/fault-tier.md).
module.exports = {
  require: ['tsx/cjs', './test/helpers/root-hooks.ts'],
  spec: ['test/faults/**/*.test.ts'],
  timeout: 600000,
  exit: true,
  reporter: 'spec',
};
