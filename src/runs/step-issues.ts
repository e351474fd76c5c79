import type { z } from 'zod';
import type { AnyCapability } from '../capabilities/define';
import type { ValidationIssue } from '../platform/errors';
import type { PlaybookStep } from './schemas';
import { fromIssues, fromRefs, inFromValue } from './step-input';

type ValidationLoc = ValidationIssue['loc'];

/**
 * The 422 issues of one step (at `loc`): an unknown tool, an input its tool's schema refuses, or a
 * `$from` value that is not a JMESPath expression. What a `$from` value will be is checked by the
 * tool's schema once it is resolved, when the step starts.
 */
export function stepIssues(
  tools: ReadonlyMap<string, AnyCapability>,
  step: PlaybookStep,
  at: number,
  where?: ValidationLoc,
): ValidationIssue[] {
  const loc = where ?? ['body', 'input', 'steps', at];
  const tool = tools.get(step.tool);
  if (!tool) return [{ loc: [...loc, 'tool'], msg: `Unknown tool ${step.tool}`, type: 'unknown_tool' }];
  const refs = fromRefs(step.input);
  const parsed = (tool.input as z.ZodType).safeParse(step.input);
  const schemaIssues = parsed.success
    ? []
    : parsed.error.issues
        .filter((issue) => !inFromValue(refs, issue))
        .map(
          (issue): ValidationIssue => ({
            loc: [
              ...loc,
              'input',
              ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment)),
            ],
            msg: issue.message,
            type: issue.code,
          }),
        );
  return refs.length > 0 ? [...fromIssues(step.input, loc), ...schemaIssues] : schemaIssues;
}
