import { api, follow, query } from './api.js';
import { decisionItem } from './approvals.js';
import { badge, duration, fill, h, readable, shortId, when } from './dom.js';

const STATUSES = ['', 'QUEUED', 'RUNNING', 'AWAITING_APPROVAL', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
// Events that come together (a step's start and end) are drawn once: the view reloads this long after the first.
const SETTLE_MS = 150;
// How an approval was resolved, in words (the API's resolved_by_credential.kind).
const CREDENTIAL_KIND = { user_jwt: 'user JWT', api_key: 'API key', mcp_token: 'MCP token' };

const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.content || '';

/** The run's workflow (`run-<execution_id>`) in the Temporal UI named by the server's configuration. */
const temporalLink = (run) =>
  `${meta('weft-temporal-ui')}/namespaces/${encodeURIComponent(meta('weft-temporal-namespace'))}` +
  `/workflows/run-${run.execution_id}/${run.run_id}/history`;

/** The run schedule that dispatched the run, if one did (the schedules view lists it). */
const scheduleLink = (run) =>
  run.schedule_id
    ? h('a', { href: '#/schedules', class: 'schedule', title: run.schedule_id }, shortId(run.schedule_id))
    : '';

export function runsView(main, executionId) {
  return executionId ? runDetail(main, executionId) : runList(main);
}

/**
 * Calls `reload` after events of the stream at `path` (several in a burst make one reload), so the
 * view follows the runs as they change, pushed by the server rather than polled. Answers the stop.
 */
function reloadOnEvents(path, reload, onEnd = () => {}) {
  const stop = new AbortController();
  let pending;
  const changed = () => {
    if (!pending) {
      pending = setTimeout(() => {
        pending = undefined;
        void reload();
      }, SETTLE_MS);
    }
  };
  follow(path, changed, stop.signal).then(onEnd, () => {});
  return () => {
    stop.abort();
    clearTimeout(pending);
  };
}

function runList(main) {
  const select = h(
    'select',
    { id: 'run-status', 'aria-label': 'Status' },
    STATUSES.map((status) => h('option', { value: status }, status || 'any status')),
  );
  const table = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, 'Older runs');
  const status = h('p', { class: 'muted' });
  fill(
    main,
    h('h1', {}, 'Runs'),
    h('label', {}, 'Status ', select),
    status,
    h(
      'table',
      { class: 'runs' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Run', 'Agent', 'Status', 'Credits', 'Schedule', 'Created', 'Updated'].map((title) => h('th', {}, title)),
        ),
      ),
      table,
    ),
    more,
  );
  let cursor = null;

  async function load(append) {
    try {
      const page = await api(
        'GET',
        `/v1/runs${query({ status: select.value, limit: 25, cursor: append ? cursor : '' })}`,
      );
      const rows = page.runs.map((run) =>
        h(
          'tr',
          { 'data-execution-id': run.execution_id },
          h('td', {}, h('a', { href: `#/runs/${run.execution_id}` }, shortId(run.execution_id)), tagsOf(run)),
          h('td', {}, run.agent),
          h('td', {}, badge(run.status)),
          h('td', { class: 'number' }, run.credits_charged),
          h('td', {}, scheduleLink(run)),
          h('td', {}, when(run.created_at)),
          h('td', {}, when(run.updated_at)),
        ),
      );
      if (append) table.append(...rows);
      else fill(table, rows);
      cursor = page.next_cursor;
      more.hidden = !cursor;
      fill(status, table.children.length === 0 ? 'No runs.' : '');
    } catch (error) {
      fill(status, h('span', { class: 'error' }, `Could not load runs: ${error.message}`));
    }
  }
  select.addEventListener('change', () => load(false));
  more.addEventListener('click', () => load(true));
  void load(false);
  // The first page follows the workspace's run events; older pages stay as loaded.
  return reloadOnEvents('/v1/runs/events', () => (table.children.length > 25 ? undefined : load(false)));
}

function runDetail(main, executionId) {
  const body = h('div', { id: 'run' }, h('p', { class: 'muted' }, 'Loading…'));
  fill(main, h('p', {}, h('a', { href: '#/runs' }, '← all runs')), body);
  let stopped = false;

  async function load() {
    try {
      const [run, audit] = await Promise.all([
        api('GET', `/v1/runs/${executionId}`),
        api('GET', `/v1/runs/${executionId}/audit`),
      ]);
      if (stopped) return;
      fill(body, renderRun(run, audit));
      body.dataset.status = run.status;
    } catch (error) {
      if (!stopped) fill(body, h('p', { class: 'error' }, `Could not load run ${executionId}: ${error.message}`));
    }
  }
  void load();
  // The run's event stream (replayed, then live, ending after run.finished) redraws it as it changes.
  const stopFollowing = reloadOnEvents(`/v1/runs/${executionId}/events`, load, () => {
    if (!stopped) void load();
  });
  return () => {
    stopped = true;
    stopFollowing();
  };
}

/** A run's tags as small labels (issue 26). */
function tagsOf(run) {
  return (run.tags ?? []).map((tag) => h('span', { class: 'tag' }, tag));
}

/** Its tags, concurrency key (and why it waits), and the run it re-runs with the lineage's check (issue 26). */
function controlOf(run, audit) {
  const parts = [];
  if (run.tags?.length) parts.push(h('span', {}, 'Tags ', tagsOf(run)));
  if (run.concurrency) {
    const { key, limit, policy } = run.concurrency;
    parts.push(h('span', { class: 'concurrency' }, `Concurrency key ${key} (limit ${limit}, ${policy})`));
  }
  if (run.queued_reason) parts.push(h('span', { class: 'reason' }, 'waiting for a free slot of its key'));
  if (run.rerun_of) {
    const lineage = audit.lineage;
    const holds = lineage?.found && lineage?.earlier_valid;
    parts.push(
      h(
        'span',
        { class: 'lineage' },
        'Re-run of ',
        h('a', { href: `#/runs/${run.rerun_of}` }, shortId(run.rerun_of)),
        holds ? ' · lineage verifies' : ' · lineage does NOT verify',
      ),
    );
  }
  if (parts.length === 0) return null;
  return h(
    'p',
    { class: 'run-control' },
    parts.flatMap((part, at) => (at === 0 ? [part] : [' · ', part])),
  );
}

function renderRun(run, audit) {
  const tools = run.steps.filter((step) => step.kind === 'TOOL');
  const decisions = run.steps.filter((step) => step.kind === 'DECISION');
  return [
    h(
      'header',
      { class: 'run-head' },
      h('h1', {}, `Run ${shortId(run.execution_id)} `, badge(run.status)),
      h(
        'p',
        { class: 'muted' },
        `${run.agent} · ${run.credits_charged} credits · created `,
        when(run.created_at),
        run.schedule_id ? [' · scheduled by ', scheduleLink(run)] : '',
        ' · ',
        h(
          'a',
          { href: temporalLink(run), target: '_blank', rel: 'noopener', class: 'temporal' },
          'Open in Temporal UI',
        ),
      ),
      h(
        'p',
        { class: `audit ${audit.valid ? 'valid' : 'invalid'}` },
        audit.valid
          ? `Audit chain verifies: ${audit.length} links`
          : `Audit chain BROKEN at link ${audit.first_invalid_seq} of ${audit.length}`,
      ),
      controlOf(run, audit),
      run.error ? h('p', { class: 'error' }, `${run.error.code}: ${run.error.message}`) : null,
    ),
    h('h2', {}, 'Timeline'),
    h(
      'ol',
      { class: 'timeline' },
      tools.map((step) =>
        h(
          'li',
          { class: `step ${step.status.toLowerCase()}`, 'data-step-no': step.step_no },
          h(
            'div',
            { class: 'step-head' },
            h('strong', {}, `${step.step_no}. ${step.tool}`),
            ' ',
            badge(step.status),
            step.requires_approval ? h('span', { class: 'reason' }, 'needs approval') : null,
            step.reused_from_step_id ? h('span', { class: 'reason reused' }, 'reused from the earlier run') : null,
            h(
              'span',
              { class: 'muted' },
              ` · ${step.credits_charged} credits`,
              step.started_at ? [' · started ', when(step.started_at)] : '',
              step.finished_at ? ` · took ${duration(step.started_at, step.finished_at)}` : '',
            ),
          ),
          h('details', {}, h('summary', {}, 'Input'), readable(step.input)),
          step.output === null ? null : h('details', { open: true }, h('summary', {}, 'Output'), readable(step.output)),
          step.error ? h('p', { class: 'error' }, `${step.error.code}: ${step.error.message}`) : null,
        ),
      ),
    ),
    h('h2', {}, 'Approvals'),
    run.approvals.length === 0
      ? h('p', { class: 'muted' }, 'None.')
      : h(
          'ul',
          { class: 'approvals' },
          run.approvals.map((approval) =>
            h(
              'li',
              {},
              `Step ${approval.step.step_no} (${approval.step.tool}) `,
              badge(approval.status),
              approval.resolved_at ? [' · ', when(approval.resolved_at)] : '',
              approval.resolved_by ? ` · by ${shortId(approval.resolved_by)}` : '',
              approval.resolved_by_credential ? ` with a ${CREDENTIAL_KIND[approval.resolved_by_credential.kind]}` : '',
              approval.notes ? h('q', {}, approval.notes) : '',
              // Issue 32: decided by its deadline, escalated, voted on by several people.
              approval.expired ? ' · decided by its deadline, no person' : '',
              approval.escalations ? ` · escalated ${approval.escalations}×` : '',
              approval.votes?.length ? ` · ${approval.votes.length} vote(s)` : '',
              approval.status === 'pending' && approval.expires_at ? [' · deadline ', when(approval.expires_at)] : '',
              approval.status === 'pending' ? [' · ', h('a', { href: '#/approvals' }, 'decide in the inbox')] : '',
            ),
          ),
        ),
    h('h2', {}, 'Decisions'),
    decisions.length === 0
      ? h('p', { class: 'muted' }, 'None recorded.')
      : h(
          'ul',
          { class: 'decisions' },
          decisions.map((step) => decisionItem(step)),
        ),
    run.output === null ? null : [h('h2', {}, 'Output'), readable(run.output)],
  ];
}
