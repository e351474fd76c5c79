import { LIMITS } from '../../rules/limits';
import type { ValidationIssue } from '../errors';
import { ValidationFailedError } from '../errors';

declare global {
  interface String {
    /** ES2024 (Node 20 has it; the project's lib is ES2023): false when a UTF-16 surrogate is unpaired. */
    isWellFormed(): boolean;
  }
}

type Part = 'body' | 'query' | 'path';
type Key = string | number;

/** A container on the walk's stack; its location is rebuilt from the parent links only when reported. */
interface Frame {
  value: unknown;
  depth: number;
  key: Key | undefined;
  parent: Frame | undefined;
}

function locOf(frame: Frame | undefined, part: Part, last?: Key): Key[] {
  const keys: Key[] = last === undefined ? [] : [last];
  for (let at = frame; at && at.key !== undefined; at = at.parent) keys.push(at.key);
  return [part, ...keys.reverse()];
}

function stringIssue(value: string): Omit<ValidationIssue, 'loc'> | undefined {
  // Postgres stores no NUL in text or jsonb, and jsonb refuses an unpaired surrogate: both would be 500s.
  if (value.includes('\u0000')) return { msg: 'NUL characters are not allowed', type: 'string_nul' };
  if (!value.isWellFormed()) return { msg: 'Unpaired UTF-16 surrogates are not allowed', type: 'string_surrogate' };
  return undefined;
}

/**
 * Refuses (422) input Postgres cannot store or that nests beyond `LIMITS.jsonDepth`: every string
 * and object key of a parsed body, query or path is checked once. The walk keeps its own stack, so
 * no input is deep enough to overflow the call stack, and it allocates one small frame per
 * container, not a copy of the path per node.
 */
export function assertCleanInput(input: unknown, part: Part): void {
  const fail = (frame: Frame | undefined, key: Key | undefined, issue: Omit<ValidationIssue, 'loc'>): never => {
    throw new ValidationFailedError([{ loc: locOf(frame, part, key), ...issue }]);
  };
  const check = (value: unknown, parent: Frame | undefined, key: Key | undefined, stack: Frame[]) => {
    if (typeof value === 'string') {
      const issue = stringIssue(value);
      if (issue) fail(parent, key, issue);
    } else if (value !== null && typeof value === 'object') {
      const depth = (parent?.depth ?? 0) + 1;
      if (depth > LIMITS.jsonDepth) {
        fail(parent, key, { msg: `Nested deeper than ${LIMITS.jsonDepth} levels`, type: 'json_too_deep' });
      }
      stack.push({ value, depth, key, parent });
    }
  };

  const stack: Frame[] = [];
  check(input, undefined, undefined, stack);
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const { value } = frame;
    if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index += 1) check(value[index], frame, index, stack);
    } else {
      const record = value as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const issue = stringIssue(key);
        if (issue) fail(frame, key, issue);
        check(record[key], frame, key, stack);
      }
    }
  }
}
