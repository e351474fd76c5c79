// The suite runs TypeScript through tsx against its own database and a real Temporal server.
module.exports = {
  require: ['tsx/cjs', './test/helpers/root-hooks.ts'],
  timeout: 30000,
  exit: true,
  reporter: 'spec',
};
