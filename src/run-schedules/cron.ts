// Checks of a schedule's `cron` and `timezone` before anything is stored, so a bad one is a 422 at
// the API rather than a refusal from Temporal later (which applies the definition after the commit).

const MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** The five fields Temporal's cron takes: minute, hour, day of month, month, day of week. */
const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, firstName: 1 },
  { name: 'day of week', min: 0, max: 7, names: DAYS, firstName: 0 },
] as const;

type Field = (typeof FIELDS)[number];

function value(field: Field, token: string): number | undefined {
  if (/^\d{1,2}$/.test(token)) return Number(token);
  const names: readonly string[] | undefined = 'names' in field ? field.names : undefined;
  const at = names?.indexOf(token.toLowerCase()) ?? -1;
  return at >= 0 && 'firstName' in field ? at + field.firstName : undefined;
}

/** Why one comma-separated part of a field is refused, or undefined. */
function partProblem(field: Field, part: string): string | undefined {
  const [range, step, extra] = part.split('/');
  if (range === undefined || extra !== undefined || range === '')
    return `${field.name}: '${part}' is not a value, range or step`;
  if (step !== undefined && !(/^\d{1,2}$/.test(step) && Number(step) > 0)) {
    return `${field.name}: the step of '${part}' must be a positive number`;
  }
  if (range === '*' || range === '?') return undefined;
  const bounds = range.split('-');
  if (bounds.length > 2) return `${field.name}: '${range}' is not a value or range`;
  const values = bounds.map((token) => value(field, token));
  if (values.some((v) => v === undefined || v < field.min || v > field.max)) {
    return `${field.name}: '${range}' is outside ${field.min}–${field.max}`;
  }
  if (values.length === 2 && values[0]! > values[1]!) return `${field.name}: the range '${range}' runs backwards`;
  return undefined;
}

/** Why a cron expression is refused (five fields, or a macro such as `@daily`), or undefined when it is fine. */
export function cronProblem(expression: string): string | undefined {
  const text = expression.trim();
  if (text.startsWith('@')) {
    return MACROS.has(text.toLowerCase()) ? undefined : `Unknown macro ${text} (use an interval instead of @every)`;
  }
  if (/TZ=/.test(text)) return 'Give the time zone as `timezone`, not in the expression';
  const parts = text.split(/\s+/);
  if (parts.length !== 5) return `A cron expression has five fields (minute hour day-of-month month day-of-week)`;
  for (const [at, field] of FIELDS.entries()) {
    for (const part of parts[at]!.split(',')) {
      const problem = partProblem(field, part);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** Whether the IANA time zone is one this process (and so, in practice, Temporal's Go runtime) knows. */
export function knownTimezone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return /^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(zone);
  } catch {
    return false;
  }
}

const MACRO_SECONDS: Record<string, number> = {
  '@hourly': 3600,
  '@daily': 86_400,
  '@midnight': 86_400,
  '@weekly': 7 * 86_400,
  '@monthly': 28 * 86_400,
  '@yearly': 365 * 86_400,
  '@annually': 365 * 86_400,
};

/** The values one field of a valid expression takes (minute or hour: fields without names). */
function fieldValues(field: Field, text: string): number[] {
  const values = new Set<number>();
  for (const part of text.split(',')) {
    const [range, step] = part.split('/') as [string, string | undefined];
    const whole = range === '*' || range === '?';
    const [low, high] = whole
      ? [field.min, field.max]
      : ((bounds) => [bounds[0]!, bounds[1] ?? (step ? field.max : bounds[0]!)])(
          range.split('-').map((token) => value(field, token)!),
        );
    for (let v = low; v <= high; v += step ? Number(step) : 1) values.add(v);
  }
  return [...values].sort((a, b) => a - b);
}

/**
 * The shortest time in seconds between two fires a valid expression allows (issue 43 item 3): read
 * from its minute and hour fields as if every day matched, so a lower bound, from one fire to the
 * next within a day and from the day's last to the next day's first.
 */
export function shortestCronGapSeconds(expression: string): number {
  const text = expression.trim();
  if (text.startsWith('@')) return MACRO_SECONDS[text.toLowerCase()] ?? 86_400;
  const [minutes, hours] = text.split(/\s+/) as [string, string];
  const times = fieldValues(FIELDS[1], hours).flatMap((hour) =>
    fieldValues(FIELDS[0], minutes).map((minute) => hour * 60 + minute),
  );
  if (times.length === 0) return 86_400;
  let shortest = times[0]! + 1440 - times.at(-1)!;
  for (let at = 1; at < times.length; at++) shortest = Math.min(shortest, times[at]! - times[at - 1]!);
  return shortest * 60;
}
