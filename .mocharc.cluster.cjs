// `npm run test:cluster`: the cluster tier, on `npm run cluster`'s multi-process Temporal (frontend, two history
// hosts, two matching hosts, worker; Postgres persistence) instead of a dev server (docs/scale-out.md): the runs'
// durability, approvals, schedules and replay tests, and the faults only a cluster has (test/cluster/).
const port = process.env.TEMPORAL_CLUSTER_PORT || '17233';
process.env.WEFT_TEST_TEMPORAL_ADDRESS ||= `127.0.0.1:${port}`;
module.exports = {
  require: ['tsx/cjs', './test/cluster/root-hooks.ts'],
  spec: [
    'test/runs-durability.test.ts',
    'test/runs-approvals.test.ts',
    'test/run-schedules.test.ts',
    'test/workflow-replay.test.ts',
    'test/cluster/**/*.test.ts',
  ],
  timeout: 600000,
  exit: true,
  reporter: 'spec',
};
