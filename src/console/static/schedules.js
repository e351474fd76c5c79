import { api } from './api.js';
import { badge, fill, h, messageArea, shortId, when } from './dom.js';

const REFRESH_MS = 5000;

/** When a schedule fires, in words. */
const cadence = (schedule) =>
  schedule.cron !== null ? `cron ${schedule.cron} (${schedule.timezone})` : `every ${schedule.interval_seconds} s`;

/**
 * Run schedules (GET /v1/run-schedules): when each fires, its next fire times as Temporal computed them,
 * its last refusal, and pause, resume and trigger now. The API decides what the credential may do.
 */
export function schedulesView(main) {
  const rows = h('tbody');
  const status = h('p', { class: 'muted' });
  const message = messageArea();
  fill(
    main,
    h('h1', {}, 'Schedules'),
    h('p', { class: 'muted' }, 'Runs dispatched by Temporal Schedules (run-schedule-<id> in the Temporal UI).'),
    message.element,
    status,
    h(
      'table',
      { class: 'schedules' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ['Schedule', 'When', 'Run', 'Overlap', 'State', 'Next fires', 'Last refusal', ''].map((title) =>
            h('th', {}, title),
          ),
        ),
      ),
      rows,
    ),
  );
  let timer;
  let stopped = false;

  async function act(schedule, action) {
    message.clear();
    try {
      await api('POST', `/v1/run-schedules/${schedule.id}/${action}`, action === 'pause' ? {} : undefined);
      message.ok(
        action === 'trigger' ? `Fired ${shortId(schedule.id)}: its run appears under Runs.` : `Done: ${action}.`,
      );
    } catch (error) {
      message.error(`Could not ${action} ${shortId(schedule.id)}: ${error.message}`);
    }
    await load();
  }

  const row = (schedule) => {
    const paused = schedule.temporal ? schedule.temporal.paused : schedule.paused;
    return h(
      'tr',
      { 'data-schedule-id': schedule.id },
      h('td', { title: schedule.id }, shortId(schedule.id), ' ', h('span', { class: 'muted' }, schedule.note || '')),
      h('td', {}, cadence(schedule)),
      h('td', {}, schedule.run.agent),
      h('td', {}, schedule.overlap),
      h(
        'td',
        { class: 'state' },
        badge(paused ? 'PAUSED' : 'ACTIVE'),
        schedule.temporal ? '' : ' (Temporal not reachable)',
      ),
      h(
        'td',
        {},
        (schedule.temporal?.next_fire_times ?? []).slice(0, 2).map((at) => h('div', {}, when(at))),
      ),
      h('td', {}, schedule.last_refusal ? [schedule.last_refusal.reason, ' · ', when(schedule.last_refusal.at)] : ''),
      h(
        'td',
        { class: 'actions' },
        paused
          ? h('button', { type: 'button', class: 'resume', onclick: () => act(schedule, 'resume') }, 'Resume')
          : h('button', { type: 'button', class: 'pause', onclick: () => act(schedule, 'pause') }, 'Pause'),
        ' ',
        h('button', { type: 'button', class: 'trigger', onclick: () => act(schedule, 'trigger') }, 'Trigger now'),
      ),
    );
  };

  async function load() {
    clearTimeout(timer);
    try {
      const page = await api('GET', '/v1/run-schedules');
      if (stopped) return;
      fill(rows, page.schedules.map(row));
      fill(status, page.schedules.length === 0 ? 'No schedules.' : '');
    } catch (error) {
      if (!stopped) fill(status, h('span', { class: 'error' }, `Could not load schedules: ${error.message}`));
    }
    // The next fire times move on: read them again while the view is open.
    if (!stopped) timer = setTimeout(load, REFRESH_MS);
  }
  void load();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
