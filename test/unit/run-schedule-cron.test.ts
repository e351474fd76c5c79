import { expect } from 'chai';
import { cronProblem, knownTimezone } from '../../src/run-schedules/cron';
import { CreateRunScheduleRequest } from '../../src/run-schedules/schemas';

const run = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance', input: {} }] } };

describe('run schedules: cron, interval and time zone checks (issue 26 part 3)', () => {
  it('accepts five-field expressions with names, ranges, lists and steps, and the macros', () => {
    for (const ok of [
      '* * * * *',
      '0 9 * * mon-fri',
      '*/15 0-6,22 1,15 jan-mar 0',
      '30 2 * * 7',
      '@daily',
      '@HOURLY',
    ]) {
      expect(cronProblem(ok), ok).to.equal(undefined);
    }
  });

  it('refuses out-of-range values, backward ranges, bad steps, wrong field counts and time zones inline', () => {
    const cases: [string, RegExp][] = [
      ['60 * * * *', /minute/],
      ['* 24 * * *', /hour/],
      ['* * 0 * *', /day of month/],
      ['* * * 13 *', /month/],
      ['* * * * 8', /day of week/],
      ['* * * * fri-mon', /backwards/],
      ['*/0 * * * *', /step/],
      ['* * * *', /five fields/],
      ['0 0 * * * *', /five fields/],
      ['@every 5m', /macro/],
      ['CRON_TZ=Europe/Paris 0 9 * * *', /timezone/],
    ];
    for (const [bad, why] of cases) expect(cronProblem(bad), bad).to.match(why);
  });

  it('knows IANA zones and refuses others', () => {
    expect(knownTimezone('Europe/Paris')).to.equal(true);
    expect(knownTimezone('UTC')).to.equal(true);
    expect(knownTimezone('Mars/Olympus')).to.equal(false);
    expect(knownTimezone('../etc/passwd')).to.equal(false);
  });

  it('reads an interval as seconds or a number with a unit, and wants exactly one of cron and interval', () => {
    const seconds = (interval: unknown) => CreateRunScheduleRequest.parse({ interval, run }).interval;
    expect([seconds(90), seconds('90s'), seconds('15m'), seconds('2h'), seconds('1d')]).to.deep.equal([
      90, 90, 900, 7200, 86_400,
    ]);
    expect(CreateRunScheduleRequest.safeParse({ interval: '367d', run }).success).to.equal(false);
    expect(CreateRunScheduleRequest.safeParse({ run }).success).to.equal(false);
    expect(CreateRunScheduleRequest.safeParse({ cron: '@daily', interval: 60, run }).success).to.equal(false);
    expect(CreateRunScheduleRequest.parse({ cron: '@daily', run })).to.include({ overlap: 'skip', timezone: 'UTC' });
  });
});
