import { clearEarlierLeftovers } from '../helpers/leftovers';
import { mochaHooks as suiteHooks } from '../helpers/root-hooks';
import { suiteTemporal } from '../helpers/temporal-server';

/**
 * The cluster tier's root hooks: the suite's, after clearing what an interrupted earlier run left on the cluster
 * (the cluster keeps its state in Postgres across runs; the suite's end check would count it against this run).
 */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(180_000);
    const suite = await suiteTemporal();
    if (suite.own) throw new Error('the cluster tier runs on `npm run cluster` (WEFT_TEST_TEMPORAL_ADDRESS)');
    const cleared = await clearEarlierLeftovers(suite);
    if (cleared.length > 0)
      console.log(`  cleared ${cleared.length} leftover(s) of an earlier run on ${suite.address}`);
    await suiteHooks.beforeAll.call(this);
  },
  afterAll: suiteHooks.afterAll,
};
