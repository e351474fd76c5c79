// `npm run test:unit`: pure-logic tests only, without Postgres, Temporal or HTTP (seconds).
module.exports = {
  require: ['tsx/cjs'],
  spec: ['test/unit/**/*.test.ts'],
  timeout: 5000,
  reporter: 'dot',
};
