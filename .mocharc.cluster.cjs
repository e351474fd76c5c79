// `npm run test:cluster`: the cluster tier, on `npm run cluster`'s multi-process Temporal (frontend, two history
// hosts, two matching hosts, worker; Postgres persistence) instead of a dev server (docs/scale-out.md): the runs'
// approvals, schedules and replay tests, the worker-kill fault scenarios, and the faults only a cluster has
// (test/cluster/). runs-durability's block that kills a Temporal server of its own (a dev server on a SQLite
// file) is left out: the cluster's own faults take its place here.
const port = process.env.TEMPORAL_CLUSTER_PORT || '17233';
process.env.WEFT_TEST_TEMPORAL_ADDRESS ||= `127.0.0.1:${port}`;
// The worker-kill scenario's load (100 in the fault tier), sized to keep the tier within 12 minutes here.
process.env.FAULT_KILL_RUNS ||= '30';
module.exports = {
  require: ['tsx/cjs', './test/cluster/root-hooks.ts'],
  spec: [
    'test/runs-durability.test.ts',
    'test/runs-approvals.test.ts',
    'test/run-schedules.test.ts',
    'test/workflow-replay.test.ts',
    'test/faults/process-kills.test.ts',
    'test/cluster/**/*.test.ts',
  ],
  grep: 'runs durability: worker, API and Temporal server killed',
  invert: true,
  timeout: 600000,
  exit: true,
  reporter: 'spec',
};
