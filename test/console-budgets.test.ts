import { existsSync } from 'node:fs';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import puppeteer from 'puppeteer-core';
import { as } from './helpers/http';
import { finished, pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// Issue 40 item 4: the console's budget approval card, in a browser (as test/console.test.ts).

const CHROMIUM = process.env.WEFT_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Waits until the page's expression (a string: the suite type-checks without the DOM's types) is truthy. */
const until = (page: Page, expression: string, timeout = 30_000) => page.waitForFunction(expression, { timeout });

const textOf = (page: Page, selector: string) =>
  page.$eval(selector, (element) => (element as unknown as { textContent: string }).textContent);

describe('reviewer console: a budget approval’s card (issue 40 item 4)', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let page: Page | undefined;

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.warn(`      SKIPPED: no browser at ${CHROMIUM}; the budget card was not tested in a browser.`);
      this.skip();
    }
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });

  after(async () => {
    await page?.close();
    await browser?.close();
  });

  async function signIn(token: string): Promise<Page> {
    const opened = await browser!.newPage();
    const errors: string[] = [];
    opened.on('pageerror', (error) => errors.push(String(error)));
    Object.assign(opened, { errors });
    await opened.evaluateOnNewDocument(
      "window.__csp = []; document.addEventListener('securitypolicyviolation', " +
        "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));",
    );
    await opened.goto(`${getStack().baseUrl}/console`, { waitUntil: 'load' });
    await opened.type('#credential', token);
    await opened.click('#sign-in-form button');
    await until(opened, "!document.getElementById('nav').hidden");
    await opened.evaluate(`location.hash = '#/approvals'`);
    return opened;
  }

  it('shows the spend against each limit, the least raise prefilled; Approve raises it and the run ends', async () => {
    const t = await newTenant(10);
    const client = as(t.api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'ontology.search', input: { query: 'ada' } },
          { tool: 'ontology.search', input: { query: 'ada' } },
        ],
      },
      budget: { max_credits: 1, max_steps: 5 },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);

    page = await signIn(t.user_jwt);
    const card = `article.budget[data-approval-id="${approval.approval_id}"]`;
    await until(page, `document.querySelector('${card} table.budget-spend')`);
    const text = await textOf(page, card);
    expect(text).to.contain('Budget: ontology.search');
    expect(text).to.contain('would exceed its budget (max_credits)');
    expect(
      await page.$eval(`${card} tr.exceeded th`, (th) => (th as unknown as { textContent: string }).textContent),
    ).to.equal('Credits');
    const prefilled = (name: string) =>
      page!.$eval(`${card} input[name="${name}"]`, (input) => (input as unknown as { value: string }).value);
    expect(await prefilled('max_credits')).to.equal('2');
    expect(await prefilled('max_steps')).to.equal('5');
    expect(await prefilled('max_duration_seconds')).to.equal('');

    await page.click(`${card} button.approve`);
    await until(page, `document.querySelector('${card} .message.ok')`);
    expect(await textOf(page, `${card} .message`)).to.contain('Budget raised');
    const run = await finished(client, id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.budget).to.deep.equal({ max_credits: 2, max_steps: 5 });

    expect(await page.evaluate('window.__csp')).to.deep.equal([]);
    expect((page as Page & { errors?: string[] }).errors).to.deep.equal([]);
  });
});
