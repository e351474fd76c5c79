import { expect } from 'chai';
import { scrapeAllowed } from '../../src/platform/metrics/scrape';

describe('metrics: who may scrape (METRICS_TOKEN)', () => {
  const token = 'a-metrics-token-of-32-characters';

  it('without a configured token, any scrape is allowed', () => {
    expect(scrapeAllowed(undefined, undefined)).to.equal(true);
    expect(scrapeAllowed('Bearer whatever', undefined)).to.equal(true);
  });

  it('with one, only the exact bearer token is allowed', () => {
    expect(scrapeAllowed(`Bearer ${token}`, token)).to.equal(true);
    expect(scrapeAllowed(`bearer ${token}`, token)).to.equal(true);
    expect(scrapeAllowed(undefined, token)).to.equal(false);
    expect(scrapeAllowed(token, token)).to.equal(false);
    expect(scrapeAllowed(`Bearer ${token}x`, token)).to.equal(false);
    expect(scrapeAllowed(`Basic ${Buffer.from(`u:${token}`).toString('base64')}`, token)).to.equal(false);
  });
});
