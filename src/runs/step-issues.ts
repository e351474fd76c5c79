import type { z } from 'zod';
import type { AnyCapability } from '../capabilities/define';
import type { ValidationIssue } from '../platform/errors';
import type { PlaybookStep } from './schemas';

type ValidationLoc = ValidationIssue['loc'];

/** The 422 issues of one step (at `loc`): an unknown tool, or an input its tool's schema refuses. */
export function stepIssues(
  tools: ReadonlyMap<string, AnyCapability>,
  step: PlaybookStep,
  at: number,
  where?: ValidationLoc,
): ValidationIssue[] {
  const loc = where ?? ['body', 'input', 'steps', at];
  const tool = tools.get(step.tool);
  if (!tool) return [{ loc: [...loc, 'tool'], msg: `Unknown tool ${step.tool}`, type: 'unknown_tool' }];
  const parsed = (tool.input as z.ZodType).safeParse(step.input);
  if (parsed.success) return [];
  return parsed.error.issues.map(
    (issue): ValidationIssue => ({
      loc: [...loc, 'input', ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))],
      msg: issue.message,
      type: issue.code,
    }),
  );
}
