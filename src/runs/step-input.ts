import type { EntityManager } from 'typeorm';
import { filterSyntaxError } from '../filters/filter';
import type { FilterPool } from '../filters/pool';
import { affectedRows, queryFirst } from '../platform/db/query';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { ValidationIssue } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import type { RunError, RunExecution, RunStatus } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import * as stepRepo from './step-repository';

/**
 * Data between a playbook's steps (issue 40 item 5): any value of a step's input of the form
 * `{"$from": "<JMESPath>"}` is replaced, when the step starts, by the expression's result over
 * `{input, steps: [{tool, status, output}]}`: the run's input as `GET /v1/runs/{id}` shows it and its
 * earlier steps, `steps[i]` being step i. The expressions are checked at dispatch as trigger filters
 * are when saved (`filterSyntaxError`), and run in the filters' worker pool under their budget. One
 * that fails, or yields null, fails the step with `input_unresolved`. The resolved input replaces the
 * step row's, so the approval rules, the approval card and the audit chain all see what runs.
 */

export const FROM_KEY = '$from';
export const INPUT_UNRESOLVED = 'input_unresolved';

type Path = (string | number)[];

/** A `$from` value of a step's input: where it sits, and the object itself. */
export interface FromRef {
  path: Path;
  value: Record<string, unknown>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every object holding the key `$from` in `input`, at any depth (not looking inside them), in document order. */
export function fromRefs(input: unknown): FromRef[] {
  const found: FromRef[] = [];
  // An explicit stack: a deeply nested input must not exhaust the call stack.
  const stack: { value: unknown; path: Path }[] = [{ value: input, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (Array.isArray(value)) {
      for (let at = value.length - 1; at >= 0; at--) stack.push({ value: value[at], path: [...path, at] });
    } else if (isObject(value)) {
      if (Object.hasOwn(value, FROM_KEY)) {
        found.push({ path, value });
        continue;
      }
      const entries = Object.entries(value);
      for (let at = entries.length - 1; at >= 0; at--) {
        stack.push({ value: entries[at]![1], path: [...path, entries[at]![0]] });
      }
    }
  }
  return found;
}

/** A playbook step's input as dispatched (its `$from` values unresolved), or null (an llm run, a decision). */
export function stepTemplate(
  run: Pick<RunExecution, 'agent' | 'input'>,
  stepNo: number,
): Record<string, unknown> | null {
  if (run.agent !== 'playbook' || !Array.isArray(run.input.steps)) return null;
  const step: unknown = run.input.steps[stepNo];
  return isObject(step) && isObject(step.input) ? step.input : null;
}

/** Whether the step's input as dispatched takes values from the run (so it must be resolved before it runs). */
export const takesValues = (run: Pick<RunExecution, 'agent' | 'input'>, stepNo: number): boolean =>
  fromRefs(stepTemplate(run, stepNo)).length > 0;

/**
 * The dispatch-time 422 issues of a step's `$from` values (under `loc`, the step's): each an object with
 * the one key `$from` holding a JMESPath expression that compiles within the filters' fan-out bound.
 */
export function fromIssues(input: Record<string, unknown>, loc: Path): ValidationIssue[] {
  const refs = fromRefs(input);
  const { maxPerStep } = LIMITS.runs.from;
  if (refs.length > maxPerStep) {
    return [
      { loc: [...loc, 'input'], msg: `At most ${maxPerStep} $from values in one step's input`, type: 'too_many' },
    ];
  }
  return refs.flatMap((ref): ValidationIssue[] => {
    const at = [...loc, 'input', ...ref.path, FROM_KEY];
    const expression = ref.value[FROM_KEY];
    if (Object.keys(ref.value).length !== 1 || typeof expression !== 'string' || expression.trim() === '') {
      const msg = 'A $from value is an object whose one key, $from, holds a JMESPath expression';
      return [{ loc: at, msg, type: 'from_value' }];
    }
    if (expression.length > LIMITS.webhook.filterChars) {
      return [{ loc: at, msg: `At most ${LIMITS.webhook.filterChars} characters`, type: 'too_long' }];
    }
    const error = filterSyntaxError(expression);
    return error ? [{ loc: at, msg: error, type: 'jmespath' }] : [];
  });
}

interface SchemaIssue {
  code: string;
  path: readonly PropertyKey[];
  errors?: readonly (readonly SchemaIssue[])[];
}

/**
 * Whether a tool schema's issue lies in a `$from` value (checked only once resolved): at or under one,
 * or a union none of whose branches would have failed but there (their issues' paths are relative).
 */
export function inFromValue(refs: readonly FromRef[], issue: SchemaIssue, base: readonly PropertyKey[] = []): boolean {
  const path = [...base, ...issue.path];
  if (refs.some((ref) => ref.path.length <= path.length && ref.path.every((segment, at) => path[at] === segment))) {
    return true;
  }
  return (
    issue.code === 'invalid_union' &&
    (issue.errors ?? []).some((branch) => branch.every((inner) => inFromValue(refs, inner, path)))
  );
}

/** The template with each `$from` value replaced by its result (a root `$from` is the whole input). */
function substitute(template: Record<string, unknown>, refs: readonly FromRef[], values: readonly unknown[]): unknown {
  let resolved: unknown = structuredClone(template);
  refs.forEach((ref, index) => {
    if (ref.path.length === 0) {
      resolved = values[index];
      return;
    }
    let parent = resolved as Record<string | number, unknown>;
    for (const segment of ref.path.slice(0, -1)) parent = parent[segment] as Record<string | number, unknown>;
    parent[ref.path.at(-1)!] = values[index];
  });
  return resolved;
}

const where = (path: Path) => ['input', ...path].map((s) => (typeof s === 'number' ? `[${s}]` : `.${s}`)).join('');

const unresolved = (stepNo: number, path: Path, why: string): RunError => ({
  code: INPUT_UNRESOLVED,
  message: `Step ${stepNo}'s ${where(path).slice(1)}: ${why}`.slice(0, 1000),
  step: stepNo,
});

// The pool refused for now (too many filters waiting, or it is closing): the step's activity retries.
const isTransient = (error: string | null) => /^filter_busy|shutting down/.test(error ?? '');

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

/** What a step's `$from` values read: the run's input and its earlier tool steps. */
export interface InputToResolve {
  template: Record<string, unknown>;
  refs: FromRef[];
  context: { input: unknown; steps: { tool: string; status: string; output: unknown }[] };
}

/**
 * In the step's first transaction (its run read, the step PENDING, the run unfinished): what resolving
 * its `$from` values needs, in one statement, or null when there is nothing to resolve: it has none, or
 * an approval showed its input (and a reviewer may have edited it), which then stands. Resolving is
 * repeatable: always from the input as dispatched, over the run's input and its finished steps.
 */
export async function inputToResolve(
  m: EntityManager,
  run: Pick<RunExecution, 'id' | 'agent' | 'input'>,
  stepNo: number,
): Promise<InputToResolve | null> {
  const template = stepTemplate(run, stepNo);
  const refs = fromRefs(template);
  if (!template || refs.length === 0) return null;
  const read = await queryFirst<{ steps: InputToResolve['context']['steps']; approved: boolean }>(
    m,
    `SELECT coalesce((SELECT jsonb_agg(jsonb_build_object('tool', s.tool, 'status', s.status, 'output', s.output)
         ORDER BY s.step_no) FROM run_steps s WHERE s.execution_id = $1 AND s.kind = 'TOOL' AND s.step_no < $2),
       '[]'::jsonb) AS steps,
       EXISTS (SELECT 1 FROM run_approvals a WHERE a.execution_id = $1 AND a.step_no = $2) AS approved`,
    [run.id, stepNo],
  );
  if (!read || read.approved) return null;
  return { template, refs, context: { input: run.input, steps: read.steps } };
}

/**
 * The step's input with its `$from` values evaluated, outside any transaction, in the filters' worker
 * pool under their budget: the input, or the failure to fail the step with. A refusal for now (the pool
 * busy or closing) is thrown, for the activity to retry.
 */
export async function evaluateInput(
  filters: Pick<FilterPool, 'evaluate'>,
  ref: { workspaceId: string; stepNo: number },
  pending: InputToResolve,
): Promise<{ input: Record<string, unknown> } | { failure: RunError }> {
  const { workspaceId, stepNo } = ref;
  const body = Buffer.from(JSON.stringify(pending.context));
  const values: unknown[] = [];
  for (const fromRef of pending.refs) {
    const outcome = await filters.evaluate(String(fromRef.value[FROM_KEY]), {
      headers: {},
      body,
      contentType: 'application/json',
      trigger: { id: '', slug: '' },
      bare: true,
      selectChars: LIMITS.runs.from.resultChars,
      workspaceId,
    });
    if (outcome.result === 'error') {
      if (isTransient(outcome.error)) throw new Error(`resolving step ${stepNo}'s input: ${outcome.error}`);
      return { failure: unresolved(stepNo, fromRef.path, `$from failed: ${outcome.error ?? 'filter_failed'}`) };
    }
    const value: unknown = JSON.parse(outcome.json ?? 'null');
    if (value === null) {
      return { failure: unresolved(stepNo, fromRef.path, `$from ${fromRef.value[FROM_KEY]} yields nothing`) };
    }
    values.push(value);
  }
  const input = substitute(pending.template, pending.refs, values);
  if (!isObject(input)) return { failure: unresolved(stepNo, [], "$from yields no object, and a step's input is one") };
  return { input };
}

/** The resolved input replaces the step row's, while it is PENDING and no approval has shown it. */
export const writeResolvedInput = (m: EntityManager, executionId: string, stepNo: number, input: unknown) =>
  affectedRows(
    m,
    `UPDATE run_steps s SET input = $3 WHERE s.execution_id = $1 AND s.step_no = $2 AND s.status = 'PENDING'
       AND NOT EXISTS (SELECT 1 FROM run_approvals a WHERE a.execution_id = $1 AND a.step_no = $2)`,
    [executionId, stepNo, JSON.stringify(input)],
  );

/**
 * Resolves a step's `$from` values on their own (a step that waits for its approval first, so that the
 * rules and the approval see what will run): read, evaluated, written. A failure (answered, for the
 * caller to fail the step with) or null. A step's run resolves them in its prepare transactions instead.
 */
export function createStepInputResolver(deps: { uow: UnitOfWork; filters: Pick<FilterPool, 'evaluate'> }) {
  return async function resolveStepInput(ref: {
    workspaceId: string;
    executionId: string;
    stepNo: number;
  }): Promise<RunError | null> {
    const { workspaceId, executionId, stepNo } = ref;
    const pending = await deps.uow({ workspaceId }, async (m) => {
      const run = await executionRepo.mustFindExecution(m, executionId);
      if (isFinished(run.status)) return null;
      const step = await stepRepo.findStep(m, executionId, stepNo);
      return step?.status === 'PENDING' ? inputToResolve(m, run, stepNo) : null;
    });
    if (!pending) return null;
    const evaluated = await evaluateInput(deps.filters, ref, pending);
    if ('failure' in evaluated) return evaluated.failure;
    await deps.uow({ workspaceId }, (m) => writeResolvedInput(m, executionId, stepNo, evaluated.input));
    return null;
  };
}
