import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import puppeteer from 'puppeteer-core';
import type { BootstrapResult } from '../src/tenancy/service';
import { eventually } from './helpers/eventually';
import { as, request } from './helpers/http';
import { scheduleGone } from './helpers/run-schedules';
import { finished, pendingApproval } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

/** Debian's `chromium`, which `scripts/setup.sh --test` installs; WEFT_TEST_CHROMIUM names another. */
const CHROMIUM = process.env.WEFT_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** Screenshots of every view (gitignored); the README's come from here. */
const SHOTS = path.resolve(__dirname, '..', 'test-output', 'console');

describe('reviewer console: the page', () => {
  it('serves /console with a strict Content-Security-Policy and no inline script', async () => {
    const page = await request('GET', '/console');
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.contain('text/html');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).to.contain("default-src 'self'");
    expect(csp).to.contain("script-src 'self'");
    expect(csp).to.contain("frame-ancestors 'none'");
    expect(csp).not.to.contain('unsafe-inline');
    expect(page.text).to.contain('<script type="module" src="/console/assets/app.js"></script>');
    expect(page.text).not.to.match(/<script>|<script type="module">|style="/);
    // The Temporal UI named by TEMPORAL_UI_ORIGIN (the test stack sets one).
    expect(page.text).to.contain('content="http://temporal-ui.test:8233"');
  });

  it('serves its listed assets, Cytoscape.js from the installed package, and nothing else', async () => {
    const app = await request('GET', '/console/assets/app.js');
    expect(app.status).to.equal(200);
    expect(app.headers.get('content-type')).to.contain('application/javascript');
    const cytoscape = await request('GET', '/console/assets/cytoscape.mjs');
    expect(cytoscape.status).to.equal(200);
    expect(cytoscape.text).to.contain('export');
    for (const file of ['index.html', '..%2Froutes.ts', 'secrets.txt']) {
      expect((await request('GET', `/console/assets/${file}`)).status, file).to.equal(404);
    }
  });
});

/** Waits until the page's expression (a string: the suite type-checks without the DOM's types) is truthy. */
const until = (page: Page, expression: string, timeout = 30_000) => page.waitForFunction(expression, { timeout });

const textOf = (page: Page, selector: string) =>
  page.$eval(selector, (element) => (element as unknown as { textContent: string }).textContent);

async function dispatchApprovalRun(t: BootstrapResult) {
  const client = as(t.api_key);
  const dispatched = await client.post('/v1/runs', {
    agent: 'playbook',
    input: {
      steps: [
        { tool: 'billing.credits_balance', input: {} },
        { tool: 'ontology.search', input: { query: 'Analytical Engine', top_k: 3 }, requires_approval: true },
      ],
    },
  });
  expect(dispatched.status, dispatched.text).to.equal(202);
  const executionId: string = dispatched.body.execution_id;
  const approval = await eventually(
    async () => (await client.get(`/v1/runs/${executionId}`)).body.approvals.find((a: any) => a.status === 'pending'),
    { what: 'the run to await approval', timeoutMs: 30_000 },
  );
  return { executionId, runId: dispatched.body.run_id as string, approvalId: approval.approval_id as string };
}

describe('reviewer console: in a browser', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  const pages: Page[] = [];

  before(async function () {
    if (!existsSync(CHROMIUM)) {
      console.warn(
        `      SKIPPED: no browser at ${CHROMIUM} (scripts/setup.sh --test installs Debian's chromium; ` +
          'WEFT_TEST_CHROMIUM names another). The console was not tested in a browser.',
      );
      this.skip();
    }
    mkdirSync(SHOTS, { recursive: true });
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // Root in a container has no user namespace for Chromium's sandbox.
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
  });

  after(async () => {
    await browser?.close();
  });

  afterEach(async () => {
    // Whatever a test did, the page ran no blocked script or style and threw nothing.
    for (const page of pages.splice(0)) {
      const violations = await page.evaluate('window.__csp');
      const errors = (page as Page & { errors?: string[] }).errors ?? [];
      await page.close();
      expect(violations, 'CSP violations').to.deep.equal([]);
      expect(errors, 'page errors').to.deep.equal([]);
    }
  });

  async function openConsole(): Promise<Page> {
    const page = await browser!.newPage();
    pages.push(page);
    const errors: string[] = [];
    Object.assign(page, { errors });
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.setViewport({ width: 1280, height: 900 });
    await page.evaluateOnNewDocument(
      "window.__csp = []; document.addEventListener('securitypolicyviolation', " +
        "(e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));",
    );
    await page.goto(`${getStack().baseUrl}/console`, { waitUntil: 'load' });
    return page;
  }

  async function signIn(token: string, hash = '#/approvals'): Promise<Page> {
    const page = await openConsole();
    await page.type('#credential', token);
    await page.click('#sign-in-form button');
    await until(page, "!document.getElementById('nav').hidden");
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
    return page;
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(SHOTS, `${name}.png`) as `${string}.png`, fullPage: true });

  it('a bad credential shows a sign-in error, not a blank page', async () => {
    const page = await openConsole();
    await page.type('#credential', 'weft_sk_not-a-real-key');
    await page.click('#sign-in-form button');
    await until(page, "!document.getElementById('sign-in-error').hidden");
    const error = await textOf(page, '#sign-in-error');
    expect(error).to.match(/^Sign-in failed: .+ \(HTTP 401\)$/);
    expect(await page.$eval('#nav', (nav) => (nav as unknown as { hidden: boolean }).hidden)).to.equal(true);
    expect(await page.evaluate("sessionStorage.getItem('weft.console.credential')")).to.equal(null);
    await shot(page, 'sign-in-error');
  });

  it('signs in with a user JWT, and a 401 later sends the reviewer back to sign in', async () => {
    const t = await newTenant();
    const page = await signIn(t.user_jwt, '#/runs');
    await until(page, "document.querySelector('main').dataset.view === 'runs'");
    expect(await page.evaluate("sessionStorage.getItem('weft.console.credential')")).to.equal(t.user_jwt);
    // A credential the API stops accepting (here: replaced by a bogus one) is dropped, with a reason.
    await page.evaluate(
      "sessionStorage.setItem('weft.console.credential', 'weft_sk_revoked'); location.hash = '#/credits'",
    );
    await until(page, "!document.getElementById('sign-in-error').hidden");
    expect(await textOf(page, '#sign-in-error')).to.contain('Your credential was refused');
  });

  it('approvals: the step, its input and the run’s decisions; approving lets the run reach SUCCEEDED', async () => {
    const t = await newTenant(10);
    const run = await dispatchApprovalRun(t);
    const client = as(t.api_key);
    const first = await client.post('/v1/cap/agent.record_decision', {
      execution_id: run.executionId,
      decision: 'Search the graph before answering',
    });
    expect(first.status, first.text).to.equal(200);
    const revised = await client.post('/v1/cap/agent.record_decision', {
      execution_id: run.executionId,
      decision: 'Search for the Analytical Engine only',
      rationale: 'narrower',
      supersedes_step_id: first.body.result.step_id,
    });
    expect(revised.status, revised.text).to.equal(200);

    // A reviewer signs in with another credential than the run's dispatching key (docs/approvals.md).
    const page = await signIn(t.user_jwt);
    const card = `article[data-approval-id="${run.approvalId}"]`;
    await until(page, `document.querySelector('${card} .decisions li')`);
    const text = await textOf(page, card);
    expect(text).to.contain('ontology.search');
    expect(text).to.contain('Analytical Engine');
    expect(text).to.contain('Search for the Analytical Engine only (narrower)');
    expect(await textOf(page, `${card} .decisions li.superseded s`)).to.equal('Search the graph before answering');
    await page.type(`${card} textarea`, 'Fine: read-only search.');
    await shot(page, 'approvals');

    await page.click(`${card} button.approve`);
    await until(page, `document.querySelector('${card} .message.ok')`);
    expect(await textOf(page, `${card} .message`)).to.contain('Approved');

    // The run's own page follows it to SUCCEEDED.
    await page.evaluate(`location.hash = '#/runs/${run.executionId}'`);
    await until(page, "document.querySelector('.run-head .badge')?.textContent === 'SUCCEEDED'");
    const head = await textOf(page, '.run-head');
    expect(head).to.match(/Audit chain verifies: \d+ links/);
    const link = await page.$eval('a.temporal', (a) => (a as unknown as { href: string }).href);
    expect(link).to.equal(
      `http://temporal-ui.test:8233/namespaces/default/workflows/run-${run.executionId}/${run.runId}/history`,
    );
    expect(await page.$$eval('.timeline .step.succeeded', (steps) => steps.length)).to.equal(2);
    const approvals = await textOf(page, 'ul.approvals');
    expect(approvals).to.contain('approved');
    expect(approvals).to.contain('Fine: read-only search.');
    expect(approvals).to.contain('with a user JWT');
    await shot(page, 'run');
    const api = await client.get(`/v1/runs/${run.executionId}`);
    expect(api.body.status).to.equal('SUCCEEDED');

    await page.evaluate("location.hash = '#/runs'");
    const row = `tr[data-execution-id="${run.executionId}"]`;
    await until(page, `document.querySelector('${row}')`);
    await shot(page, 'runs');
    await page.select('#run-status', 'FAILED');
    await until(
      page,
      `!document.querySelector('${row}') && document.querySelector('main').textContent.includes('No runs.')`,
    );
    await page.select('#run-status', 'SUCCEEDED');
    await until(page, `document.querySelector('${row}')`);
  });

  it('approvals: a new approval appears by itself; one someone else resolved first is a plain 409', async () => {
    const t = await newTenant(10);
    // Not the run's dispatching key, which may not resolve at all (403): the user's JWT.
    const page = await signIn(t.user_jwt);
    await until(page, "!document.querySelector('p.empty').hidden");
    const run = await dispatchApprovalRun(t);
    const card = `article[data-approval-id="${run.approvalId}"]`;
    // No reload: the inbox refreshes itself.
    await until(page, `document.querySelector('${card}')`);
    // The notes typed keep the card on screen when a refresh finds it resolved elsewhere.
    await page.type(`${card} textarea`, 'Looks fine to me.');
    const other = await as(t.user_jwt).post(`/v1/approvals/${run.approvalId}/resolve`, { decision: 'REJECTED' });
    expect(other.status, other.text).to.equal(200);

    await page.click(`${card} button.approve`);
    await until(page, `document.querySelector('${card} .message.error')`);
    expect(await textOf(page, `${card} .message`)).to.match(
      /^Someone else resolved this first; nothing changed \(409\)/,
    );
    const read = await eventually(
      async () => {
        const body = (await as(t.api_key).get(`/v1/runs/${run.executionId}`)).body;
        return body.status === 'FAILED' ? body : undefined;
      },
      { what: 'the rejected run to fail', timeoutMs: 30_000 },
    );
    expect(read.error.code).to.equal('approval_rejected');
  });

  it('approvals (issue 32): the rule, deadline and votes; an edit in the form generated from the schema', async () => {
    const t = await newTenant(10);
    const rules = {
      rules: [
        {
          match: { tool: 'ontology.search' },
          action: 'require_approval',
          approvers: { min: 1, from: [t.user_id] },
          deadline: { after_seconds: 600, on_expiry: 'reject' },
        },
      ],
      default_action: 'allow',
    };
    expect((await as(t.user_jwt).put('/v1/approval-policies', rules)).status).to.equal(200);
    const dispatched = await as(t.api_key).post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: 'Analytical Engine', top_k: 3 } }] },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(as(t.api_key), executionId);
    const page = await signIn(t.user_jwt);
    const card = `article[data-approval-id="${approval.approval_id}"]`;
    await until(page, `document.querySelector('${card}')`);
    expect(await textOf(page, `${card} .policy`)).to.contain('version 1, rule 0');
    const deadline = await textOf(page, `${card} .deadline`);
    expect(deadline).to.contain('if nobody decides by then, it is rejected');
    expect(await page.$eval(`${card} .deadline time`, (el) => el.getAttribute('datetime'))).to.equal(
      approval.expires_at,
    );
    expect(await textOf(page, `${card} .quorum`)).to.contain('0 of 1 approvals needed');

    // The form has a field per property of the tool's input schema, filled with the input as asked.
    await page.click(`${card} button.edit`);
    await until(page, `document.querySelector('${card} .schema-form [data-field="top_k"] input')`);
    const topK = `${card} .schema-form [data-field="top_k"] input`;
    expect(await page.$eval(topK, (el) => (el as unknown as { type: string; value: string }).type)).to.equal('number');
    expect(await page.$eval(topK, (el) => (el as unknown as { value: string }).value)).to.equal('3');
    await page.$eval(topK, (el) => {
      (el as unknown as { value: string }).value = '';
    });
    await page.type(topK, '2');
    await shot(page, 'approval-edit');
    await page.click(`${card} button.approve-edited`);
    await until(page, `document.querySelector('${card} .message.ok')`);
    expect(await textOf(page, `${card} .message`)).to.contain('Approved with your edits');
    const run = await finished(as(t.api_key), executionId);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps[0].input).to.deep.equal({ query: 'Analytical Engine', top_k: 2 });
    expect(run.approvals[0].edited_input).to.deep.equal({ query: 'Analytical Engine', top_k: 2 });
    expect(run.approvals[0].votes.map((vote: any) => vote.user_id)).to.deep.equal([t.user_id]);
  });

  it('approvals (issue 32): RESPOND to an llm run from its card; the model gets the message', async () => {
    const t = await newTenant(10);
    const dispatched = await as(t.api_key).post('/v1/runs', {
      agent: 'llm',
      input: { goal: 'what is my balance', approval: 'all' },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(as(t.api_key), executionId);
    const page = await signIn(t.user_jwt);
    const card = `article[data-approval-id="${approval.approval_id}"]`;
    await until(
      page,
      `document.querySelector('${card} .responder') && !document.querySelector('${card} .responder').hidden`,
    );
    expect(await textOf(page, `${card} .policy`)).to.contain('the step itself');
    await page.type(`${card} textarea.respond-message`, 'Your balance is ten credits.');
    await page.click(`${card} button.respond`);
    await until(page, `document.querySelector('${card} .message.ok')`);
    expect(await textOf(page, `${card} .message`)).to.contain('Responded');
    const run = await finished(as(t.api_key), executionId);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.approvals[0]).to.deep.include({ status: 'responded', response: 'Your balance is ten credits.' });
    expect(run.output.answer).to.contain('Your balance is ten credits.');
  });

  it('change-sets (issue 31 part 4): a staged prompt as a diff; Apply writes it, Reject writes nothing', async () => {
    const t = await newTenant(20);
    const stage = async (prompt: string) => {
      const staged = await as(t.api_key).post('/v1/ontology/prompt', { prompt, stage: true });
      expect(staged.status, staged.text).to.equal(200);
      return staged.body.change_set_id as string;
    };
    const applied = await stage('Ada Lovelace works at Analytical Engines Ltd.');
    const rejected = await stage('Grace Hopper works at Remington Rand Inc.');
    const page = await signIn(t.user_jwt);
    const card = (id: string) => `article[data-change-set-id="${id}"]`;
    await until(page, `document.querySelector('${card(applied)} .diff.edges li')`);
    const text = await textOf(page, card(applied));
    expect(text).to.contain('+ person “Ada Lovelace”');
    expect(text).to.contain('+ Ada Lovelace —WORKS_AT→ Analytical Engines Ltd');
    expect(text).to.contain('update prompt');
    await shot(page, 'change-set');

    await page.click(`${card(applied)} button.apply`);
    await until(page, `document.querySelector('${card(applied)} .message.ok')`);
    expect(await textOf(page, `${card(applied)} .message`)).to.contain('Applied: 2 node(s), 1 new edge(s).');
    await until(page, `document.querySelector('${card(rejected)} .diff.nodes li')`);
    await page.click(`${card(rejected)} button.reject`);
    await until(page, `document.querySelector('${card(rejected)} .message.ok')`);
    expect(await textOf(page, `${card(rejected)} .message`)).to.contain('Rejected: nothing was written.');

    const names = (await as(t.api_key).get('/v1/ontology/nodes')).body.map((node: { name: string }) => node.name);
    expect(names.sort()).to.deep.equal(['Ada Lovelace', 'Analytical Engines Ltd']);
  });

  it('merge queue: both people side by side with reasons and score; rejecting takes the candidate out', async () => {
    const t = await newTenant();
    const client = as(t.api_key);
    for (const name of ['Ada Lovelace', 'ADA  lovelace']) {
      const node = await client.post('/v1/ontology/nodes', {
        type: 'person',
        name,
        properties: { email: 'ada@example.org', born: name === 'Ada Lovelace' ? 1815 : undefined },
      });
      expect(node.status, node.text).to.equal(201);
    }
    const candidate = await eventually(async () => (await client.get('/v1/ontology/merges')).body[0], {
      what: 'the resolver to propose the pair',
      timeoutMs: 30_000,
    });

    const page = await signIn(t.api_key, '#/merges');
    const card = `article[data-candidate-id="${candidate.id}"]`;
    await until(page, `document.querySelector('${card}')`);
    const text = await textOf(page, card);
    expect(text).to.contain('score 100%');
    expect(text).to.contain('same email');
    expect(text).to.contain('same name (normalised)');
    expect(await page.$$eval(`${card} .side`, (sides) => sides.length)).to.equal(2);
    expect(text).to.contain('1815');
    await shot(page, 'merges');

    await page.type(`${card} textarea`, 'Different people.');
    await page.click(`${card} button.reject`);
    await until(page, `document.querySelector('${card} .message.ok')`);
    expect(await textOf(page, `${card} .message`)).to.contain('Rejected');
    const pending = (await client.get('/v1/ontology/merges')).body as any[];
    expect(pending.map((item) => item.id)).not.to.include(candidate.id);
  });

  it('merge view: an applied merge has an Undo, which restores the pair and lists the edges left', async () => {
    const t = await newTenant();
    const client = as(t.api_key);
    const config = await client.patch('/v1/ontology/config', {
      resolver: { auto_merge_enabled: true, merge_confidence_threshold: 0.9 },
    });
    expect(config.status, config.text).to.equal(200);
    const created: string[] = [];
    for (const name of ['Mary Jackson', 'M. Jackson']) {
      const node = await client.post('/v1/ontology/nodes', {
        type: 'person',
        name,
        properties: { email: 'mary@nasa.example' },
      });
      expect(node.status, node.text).to.equal(201);
      created.push(node.body.id);
    }
    const merged = await eventually(async () => (await client.get('/v1/ontology/merges?status=applied')).body[0], {
      what: 'the resolver to auto-merge the pair',
      timeoutMs: 30_000,
    });
    expect(merged).to.include({ survivor_node_id: created[0], duplicate_node_id: created[1] });
    const langley = await client.post('/v1/ontology/nodes', { type: 'organization', name: 'Langley' });
    const later = await client.post('/v1/ontology/edges', {
      type: 'works_at',
      source_node_id: created[0],
      target_node_id: langley.body.id,
    });
    expect(later.status, later.text).to.equal(201);

    const page = await signIn(t.api_key, '#/merges');
    const card = `#applied-merges article[data-candidate-id="${merged.id}"]`;
    await until(page, `document.querySelector('${card}')`);
    expect(await textOf(page, card)).to.contain('M. Jackson → Mary Jackson');
    await page.type(`${card} textarea`, 'Two Marys.');
    await page.click(`${card} button.undo`);
    await until(page, `document.querySelector('${card} .message.ok')`);
    expect(await textOf(page, `${card} .message`)).to.contain('Undone: M. Jackson is back');
    await until(page, `document.querySelector('${card} li[data-edge-id="${later.body.id}"]')`);
    await shot(page, 'merges-undo');

    const history = (await client.get(`/v1/ontology/merges/${merged.id}`)).body;
    expect(history.candidate.status).to.equal('unmerged');
    expect(history.actions.map((a: any) => a.action)).to.deep.equal(['merged', 'unmerged']);
    expect(history.actions[1].notes).to.equal('Two Marys.');
    expect((await client.get(`/v1/ontology/nodes/${created[1]}`)).status).to.equal(200);
  });

  it('graph explorer: typeahead, the neighbourhood drawn node for node, a click re-centres', async () => {
    const t = await newTenant();
    const client = as(t.api_key);
    const node = async (type: string, name: string, properties: Record<string, unknown> = {}) => {
      const created = await client.post('/v1/ontology/nodes', { type, name, properties });
      expect(created.status, created.text).to.equal(201);
      return created.body.id as string;
    };
    const edge = async (type: string, source: string, target: string) => {
      const created = await client.post('/v1/ontology/edges', { type, source_node_id: source, target_node_id: target });
      expect(created.status, created.text).to.equal(201);
    };
    // Ada — 1 hop: Babbage, Engines Ltd, the Analytical Engine, Byron — 2 hops: Difference Engine, London —
    // 3 hops: Thames (beyond the drawn 2) — and Turing, connected to nothing.
    const ada = await node('person', 'Ada Lovelace', { born: 1815, known_for: 'the first program' });
    const babbage = await node('person', 'Charles Babbage');
    const ltd = await node('organization', 'Analytical Engines Ltd');
    const engine = await node('project', 'Analytical Engine');
    const byron = await node('person', 'Lord Byron');
    const difference = await node('project', 'Difference Engine');
    const london = await node('place', 'London');
    const thames = await node('place', 'Thames');
    await node('person', 'Alan Turing');
    await edge('KNOWS', ada, babbage);
    await edge('WORKS_AT', ada, ltd);
    await edge('WORKS_ON', ada, engine);
    await edge('CHILD_OF', ada, byron);
    await edge('WORKS_ON', babbage, difference);
    await edge('LOCATED_IN', ltd, london);
    await edge('FLOWS_THROUGH', thames, london);

    const page = await signIn(t.api_key, '#/graph');
    await page.waitForSelector('#graph-search');
    await page.type('#graph-search', 'lovel');
    await until(
      page,
      "[...document.querySelectorAll('#graph-suggestions button')]" +
        ".some((b) => b.textContent.startsWith('Ada Lovelace'))",
    );
    await page.click('#graph-suggestions button');
    await until(page, `document.getElementById('graph-canvas').dataset.centre === '${ada}'`);
    expect(await page.evaluate('window.__cy.nodes().length')).to.equal(7);
    expect(await page.evaluate('window.__cy.edges().length')).to.equal(6);
    expect(
      await page.$eval('#graph-canvas', (c) => (c as unknown as { dataset: { nodeCount: string } }).dataset.nodeCount),
    ).to.equal('7');
    // Drawn on a real canvas, with a colour per type.
    expect(await page.$$eval('#graph-canvas canvas', (canvases) => canvases.length)).to.be.greaterThan(0);
    const colours = await page.evaluate("new Set(window.__cy.nodes().map((n) => n.style('background-color'))).size");
    expect(colours).to.equal(4);
    expect(await textOf(page, '#graph-panel')).to.contain('the first program');
    await shot(page, 'graph');

    // A click on London re-centres there: within 2 hops now Thames, Engines Ltd and Ada, not Babbage.
    await page.evaluate(`window.__cy.getElementById('${london}').emit('tap')`);
    await until(page, `document.getElementById('graph-canvas').dataset.centre === '${london}'`);
    const names = (await page.evaluate('window.__cy.nodes().map((n) => n.data("name")).sort()')) as string[];
    expect(names).to.deep.equal(['Ada Lovelace', 'Analytical Engines Ltd', 'London', 'Thames']);
    expect(await textOf(page, '#graph-panel')).to.contain('London');
  });

  it('schedules: a schedule with its next fires; pause, resume, trigger now; runs show their schedule', async () => {
    const t = await newTenant(10);
    const client = as(t.api_key);
    const created = await client.post('/v1/run-schedules', {
      cron: '0 3 1 1 *',
      run: { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } },
      note: 'new year',
    });
    expect(created.status, created.text).to.equal(201);
    const id: string = created.body.id;
    try {
      const page = await signIn(t.api_key, '#/schedules');
      const row = `tr[data-schedule-id="${id}"]`;
      await until(page, `document.querySelector('${row} .state')?.textContent.includes('ACTIVE')`);
      expect(await textOf(page, row))
        .to.contain('cron 0 3 1 1 * (UTC)')
        .and.contain('new year');
      await page.click(`${row} button.pause`);
      await until(page, `document.querySelector('${row} .state')?.textContent.includes('PAUSED')`);
      expect((await client.get(`/v1/run-schedules/${id}`)).body.temporal.paused).to.equal(true);
      await page.click(`${row} button.resume`);
      await until(page, `document.querySelector('${row} .state')?.textContent.includes('ACTIVE')`);
      await page.click(`${row} button.trigger`);
      await until(page, "document.querySelector('.message.ok')?.textContent.startsWith('Fired')");
      await shot(page, 'schedules');
      const runs = await eventually(
        async () => (await client.get(`/v1/runs?schedule_id=${id}`)).body.runs[0] as { execution_id: string },
        { what: 'the triggered run' },
      );
      await page.evaluate(`location.hash = '#/runs'`);
      const runRow = `tr[data-execution-id="${runs.execution_id}"] a.schedule`;
      await until(page, `document.querySelector('${runRow}')?.textContent === '${id.slice(0, 8)}'`);
    } finally {
      await client.delete(`/v1/run-schedules/${id}`);
      await scheduleGone(id);
    }
  });

  it('connectors (issue 41): each connector with its tools, read or write, and never its secret', async () => {
    const t = await newTenant(10);
    // Written past the API: the suite's stack refuses loopback servers, and the view only reads rows.
    const tools = [
      {
        name: 'lookup_issue',
        remote_name: 'lookup_issue',
        description: 'Looks an issue up',
        read_only: true,
        input_schema: { type: 'object' },
      },
      {
        name: 'create_issue',
        remote_name: 'createIssue',
        description: 'Files an issue',
        read_only: false,
        input_schema: { type: 'object' },
      },
    ];
    const [row] = await getStack().ownerDataSource.query(
      `INSERT INTO connectors (workspace_id, name, kind, url, auth_type, auth_sealed, auth_hint, tools, created_by)
       VALUES ($1, 'tracker', 'mcp', 'https://mcp.tracker.example/mcp', 'bearer', 'c2VhbGVk', $2, $3, $4) RETURNING id`,
      [
        t.workspace_id,
        JSON.stringify({ fingerprint: 'abcdef012345', last4: 'x9Qa' }),
        JSON.stringify(tools),
        t.user_id,
      ],
    );
    const page = await signIn(t.api_key, '#/connectors');
    const card = `section[data-connector-id="${row.id}"]`;
    await until(page, `document.querySelector('${card} tr[data-tool="tracker.create_issue"]') !== null`);
    expect(await textOf(page, card))
      .to.contain('https://mcp.tracker.example/mcp')
      .and.contain('bearer …x9Qa')
      .and.not.contain('c2VhbGVk');
    expect(await textOf(page, `${card} tr[data-tool="tracker.lookup_issue"] .kind`)).to.equal('READ');
    expect(await textOf(page, `${card} tr[data-tool="tracker.create_issue"] .kind`)).to.equal('WRITE');
    await shot(page, 'connectors');
  });

  it('credits: the balance and the workspace’s ledger', async () => {
    const t = await newTenant(10);
    const searched = await as(t.api_key).post('/v1/ontology/search', { q: 'Ada', top_k: 1 });
    expect(searched.status, searched.text).to.equal(200);
    const page = await signIn(t.api_key, '#/credits');
    await until(page, "document.querySelectorAll('table.ledger tbody tr').length === 1");
    expect(await textOf(page, '#balance')).to.equal('9 credits');
    expect(await textOf(page, 'table.ledger tbody')).to.contain('ontology.search.hybrid');
    await shot(page, 'credits');
  });

  it('runs: a run’s page follows its event stream, redrawn when it changes and never polled (issue 26)', async () => {
    const t = await newTenant(10);
    const { executionId, approvalId } = await dispatchApprovalRun(t);
    const page = await signIn(t.api_key, `#/runs/${executionId}`);
    const reads: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === `/v1/runs/${executionId}`) reads.push(request.url());
    });
    await until(page, "document.getElementById('run')?.dataset.status === 'AWAITING_APPROVAL'");
    // The stream's replay of what already happened redraws the page once; after that, while the run
    // waits, the page asks nothing of it: the open stream is its only request.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const before = reads.length;
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(reads.length, 'reads of the run while nothing changed').to.equal(before);
    const resolved = await as(t.user_jwt).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
    expect(resolved.status, resolved.text).to.equal(200);
    await until(page, "document.getElementById('run')?.dataset.status === 'SUCCEEDED'");
    expect(reads.length, 'the run is read again after its events').to.be.greaterThan(before);
  });

  it('runs: a rerun shows its tags, concurrency key, reused steps and verified lineage (issue 26)', async () => {
    const t = await newTenant(10);
    const client = as(t.api_key);
    const earlier = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance' }] },
      tags: ['nightly'],
      concurrency: { key: 'import', policy: 'enqueue' },
    });
    const done = (id: string) => async () => {
      const read = await client.get(`/v1/runs/${id}`);
      return read.body.status === 'SUCCEEDED' && read.body;
    };
    await eventually(done(earlier.body.execution_id), { what: 'the earlier run' });
    const rerun = await client.post(`/v1/runs/${earlier.body.execution_id}/rerun`, { from_step: 1 });
    expect(rerun.status, rerun.text).to.equal(202);
    await eventually(done(rerun.body.execution_id), { what: 'the rerun' });

    const page = await signIn(t.api_key, `#/runs/${rerun.body.execution_id}`);
    await until(page, "document.querySelector('.run-control .lineage')");
    const control = await textOf(page, '.run-control');
    expect(control).to.contain('nightly');
    expect(control).to.contain('Concurrency key import (limit 1, enqueue)');
    expect(control).to.contain(`Re-run of ${earlier.body.execution_id.slice(0, 8)}`);
    expect(control).to.contain('lineage verifies');
    expect(await textOf(page, '.timeline .step[data-step-no="0"]')).to.contain('reused from the earlier run');
    expect(await page.$$eval('.timeline .step .reused', (marks) => marks.length)).to.equal(1);
  });
});
